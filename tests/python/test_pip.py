# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""pip from a clean copy of the tree, as a Python user installs rshare:
`python3 -m venv v && v/bin/pip install --no-build-isolation .` offline
builds librshare from the tree when none is installed and the wheel
carries it; every interpreter and every library gets a build of its own;
the sdist carries what it builds from, and builds."""

import glob
import os
import re
import shutil
import subprocess
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("RSHARE_BUILD_DIR")
DEBIAN_PYTHON = "/usr/bin/python3"

# Prints where the module and the library it mapped are, after using it.
USE_IT = ("import rshare\n"
          "with rshare.open('sim0') as d, d.alloc_pd() as p:\n"
          "    assert d.import_pd(p.export()).handle == p.handle\n"
          "maps = open('/proc/self/maps').read()\n"
          "libs = {l.split()[-1] for l in maps.splitlines() if 'librshare.so' in l}\n"
          "assert len(libs) == 1, libs\n"
          "print(rshare.__file__)\n"
          "print(libs.pop())\n")


def clean_copy(dest):
    """The tree's files as a clone has them (tracked, and new ones not
    ignored), without any build directory."""
    names = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        if os.path.isfile(os.path.join(ROOT, name)):
            os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), os.path.join(dest, name))
    return dest


def build_env(tmp, **extra):
    """No installed librshare is found (pkg-config searches an empty
    directory), nothing of this build tree leaks in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_PRELOAD", "RSHARE_LIBDIR", "PKG_CONFIG_PATH",
                        "RSHARE_PY_BUILD_BASE", "LD_LIBRARY_PATH")}
    empty = os.path.join(tmp, "no-pkgconfig")
    os.makedirs(empty, exist_ok=True)
    env.update(PKG_CONFIG_LIBDIR=empty, PIP_NO_CACHE_DIR="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def make_venv(python, path):
    subprocess.run([python, "-m", "venv", str(path)], check=True, timeout=120,
                   capture_output=True)
    return path


def pip_install(venv, what, cwd, env):
    proc = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index",
                           "--no-build-isolation", what], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def use(venv, tmp):
    """(module file, mapped librshare), from outside the source tree."""
    proc = subprocess.run([os.path.join(venv, "bin", "python"), "-c", USE_IT], cwd=tmp,
                          env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    module, lib = proc.stdout.split()
    return module, lib


def build_dirs(src):
    return sorted(os.listdir(os.path.join(src, "build-python")))


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A clean copy, and Debian's python3 in a fresh venv that installed it."""
    tmp = tmp_path_factory.mktemp("pip")
    src = clean_copy(str(tmp / "src"))
    venv = make_venv(DEBIAN_PYTHON, tmp / "v")
    pip_install(venv, ".", src, build_env(str(tmp)))
    return tmp, src, venv


def test_fresh_venv_gets_the_library_in_the_wheel(first):
    tmp, src, venv = first
    module, lib = use(venv, tmp)
    package = os.path.dirname(module)
    assert package.startswith(str(venv)), module
    assert lib == os.path.join(package, "librshare.so.1"), lib
    assert len(build_dirs(src)) == 1
    # SWIG's output and setuptools' files stay out of the sources.
    assert not glob.glob(os.path.join(src, "swig", "*_wrap.c"))
    assert not glob.glob(os.path.join(src, "bindings", "python", "*.egg-info"))


@pytest.mark.skipif(not BUILD, reason="needs RSHARE_BUILD_DIR (set by ctest)")
def test_another_library_gets_its_own_build(first):
    """RSHARE_LIBDIR after a bundled build: a new build linked to that
    library (once, the earlier build was reused and the setting ignored)."""
    tmp, src, _ = first
    before = build_dirs(src)
    venv = make_venv(DEBIAN_PYTHON, tmp / "v-libdir")
    libdir = os.path.realpath(os.path.join(BUILD, "lib"))
    pip_install(venv, ".", src, build_env(str(tmp), RSHARE_LIBDIR=libdir))
    after = build_dirs(src)
    assert len(after) == len(before) + 1, (before, after)
    module, lib = use(venv, tmp)
    assert os.path.dirname(lib) == libdir, lib
    assert not os.path.exists(os.path.join(os.path.dirname(module), "librshare.so.1"))


def other_interpreter():
    """A Python 3 that is not Debian's /usr/bin/python3 (pyenv's on PATH,
    another /usr/bin/python3.X) and can build (setuptools of its own, or
    a version Debian has, whose setuptools the build backend then uses)."""
    debian = os.path.realpath(DEBIAN_PYTHON)
    for cand in [shutil.which("python3"), *sorted(glob.glob("/usr/bin/python3.[0-9]*"))]:
        if not cand or not re.search(r"python3(\.\d+)?$", cand):
            continue
        probe = subprocess.run([cand, "-c", "import sys, os; print(os.path.realpath("
                                "sys.executable)); print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            continue
        exe, version = probe.stdout.split()
        if exe == debian:
            continue
        has_setuptools = subprocess.run([cand, "-c", "import setuptools"],
                                        capture_output=True).returncode == 0
        if has_setuptools or os.path.isdir(f"/usr/lib/python{version}"):
            return cand
    return None


def test_second_interpreter_gets_its_own_build(first):
    tmp, src, venv = first
    python = other_interpreter()
    if python is None:
        pytest.skip("no second Python 3 interpreter on this machine")
    before = build_dirs(src)
    other = make_venv(python, tmp / "v-other")
    pip_install(other, ".", src, build_env(str(tmp)))
    assert len(build_dirs(src)) == len(before) + 1
    module, lib = use(other, tmp)
    assert lib == os.path.join(os.path.dirname(module), "librshare.so.1")
    assert module.startswith(str(other)), module
    # The first install still works with its own module.
    module, lib = use(venv, tmp)
    assert module.startswith(str(venv)), module


def test_sdist_carries_the_header_and_builds(first):
    tmp, src, _ = first
    dist = tmp / "dist"
    proc = subprocess.run([DEBIAN_PYTHON, "-c",
                           "import sys; sys.path.insert(0, 'packaging/pep517');"
                           "import rshare_backend; print(rshare_backend.build_sdist(sys.argv[1]))",
                           str(dist)], cwd=src, env=build_env(str(tmp)),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sdist = dist / proc.stdout.split()[-1]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        metadata = tar.extractfile(f"{sdist.name[:-len('.tar.gz')]}/PKG-INFO").read().decode()
    for needed in ("capi/include/rshare/rshare.h", "swig/rshare.i", "abi/rshare.map",
                   "CMakeLists.txt", "setup.py", "LICENSE"):
        assert needed in names, needed
    for field in ("License: GPL-2.0-only OR BSD-2-Clause", "Author-email: The rshare contributors",
                  "Project-URL: Homepage, https://"):
        assert field in metadata, field
    venv = make_venv(DEBIAN_PYTHON, tmp / "v-sdist")
    pip_install(venv, str(sdist), str(tmp), build_env(str(tmp)))
    module, lib = use(venv, tmp)
    assert lib == os.path.join(os.path.dirname(module), "librshare.so.1")
