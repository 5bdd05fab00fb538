# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""pip's build backend for rshare (pyproject.toml): setuptools' own, once
what it needs can be imported.

With --no-build-isolation pip installs nothing, and a venv made without
--system-site-packages sees neither Debian's python3-setuptools nor
python3-wheel (Python 3.11's venv has its own setuptools, but no wheel).
When this interpreter is a Python version Debian has, Debian's copies (pure
Python) are used; otherwise the error names what to install.
"""
import importlib
import os
import sys

DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"


def _debian_has_this_python() -> bool:
    major, minor = sys.version_info[:2]
    return os.path.isdir(f"/usr/lib/python{major}.{minor}") and \
        os.path.isdir(DEBIAN_DIST_PACKAGES)


def _require(module: str, debian_package: str) -> None:
    try:
        importlib.import_module(module)
        return
    except ImportError:
        pass
    if _debian_has_this_python() and \
            os.path.isdir(os.path.join(DEBIAN_DIST_PACKAGES, module)):
        sys.path.append(DEBIAN_DIST_PACKAGES)
        importlib.import_module(module)
        return
    raise SystemExit(
        f"rshare: building needs the Python package '{module}', which {sys.executable} "
        f"cannot import: pip install {module} (or build without --no-build-isolation, "
        f"which installs it), or for Debian's python3: apt-get install {debian_package} "
        f"and make the venv with --system-site-packages")


_require("setuptools", "python3-setuptools")
from setuptools import build_meta as _setuptools  # noqa: E402
from setuptools.build_meta import *  # noqa: E402,F401,F403  (the other hooks as they are)


def _with_wheel(hook):
    """A hook that makes a wheel (or the wheel's metadata) needs `wheel`."""
    def run(*args, **kwargs):
        _require("wheel", "python3-wheel")
        return hook(*args, **kwargs)
    run.__name__ = hook.__name__
    return run


build_wheel = _with_wheel(_setuptools.build_wheel)
prepare_metadata_for_build_wheel = _with_wheel(_setuptools.prepare_metadata_for_build_wheel)
if hasattr(_setuptools, "build_editable"):
    build_editable = _with_wheel(_setuptools.build_editable)
    prepare_metadata_for_build_editable = _with_wheel(
        _setuptools.prepare_metadata_for_build_editable)
