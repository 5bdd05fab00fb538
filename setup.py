# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Build the compiled module rshare._rshare for pip (metadata: pyproject.toml).

The module is SWIG's wrapper of swig/rshare.i plus the hand-written C in
bindings/python/ext/, linked against librshare.so.1, which comes from
  - RSHARE_LIBDIR=<dir>: the library in <dir> (e.g. a CMake build tree's
    build/lib), found by the module through its RUNPATH; or
  - an installed librshare of this version or newer that `pkg-config rshare`
    names (Debian's librshare-dev, a `cmake --install`); or else
  - this tree: CMake builds librshare, and the wheel carries it beside the
    module (rshare/librshare.so.1, found through the RUNPATH $ORIGIN).
Build files go to RSHARE_PY_BUILD_BASE (default: build-python/), never into
a CMake build directory, in a directory of their own per interpreter and
library, so a build is never reused for another of either.
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join("capi", "include", "rshare", "rshare.h")
SWIG_INTERFACE = os.path.join("swig", "rshare.i")
SONAME = "librshare.so.1"
# Every hand-written C file of the module (the CMake build lists the same).
C_SOURCES = sorted(os.path.relpath(p, ROOT)
                   for p in glob.glob(os.path.join(ROOT, "bindings", "python", "ext", "*.c")))
SYSTEM_DIRS = {"/usr/lib", "/lib", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"}


def version() -> str:
    """MAJOR.MINOR.PATCH from the header, the library's own version."""
    with open(os.path.join(ROOT, HEADER)) as f:
        text = f.read()
    parts = [re.search(rf"#define RSHARE_VERSION_{p} (\d+)", text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def installed_libdir():
    """The library directory of RSHARE_LIBDIR or of an installed librshare
    (pkg-config, this version or newer), or None: build it from this tree."""
    libdir = os.environ.get("RSHARE_LIBDIR")
    if libdir:
        return os.path.abspath(libdir)
    if shutil.which("pkg-config"):
        found = subprocess.run(["pkg-config", f"--atleast-version={version()}", "rshare"])
        if found.returncode == 0:
            proc = subprocess.run(["pkg-config", "--variable=libdir", "rshare"],
                                  capture_output=True, text=True)
            if proc.returncode == 0 and proc.stdout.strip():
                return os.path.normpath(proc.stdout.strip())
    return None


def build_base(libdir) -> str:
    """This interpreter's and this library's own build directory."""
    identity = "\0".join([os.path.realpath(sys.executable), sys.version, libdir or "bundled"])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    root = os.environ.get("RSHARE_PY_BUILD_BASE") or os.path.join(ROOT, "build-python")
    return os.path.join(root, f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}-{digest}")


def need_program(name, debian_package):
    path = shutil.which(name)
    if not path:
        sys.exit(f"rshare: building the Python module needs '{name}', which is not on PATH: "
                 f"apt-get install {debian_package}")
    return path


def check_build_tools():
    """What the build runs, each named with the Debian package that has it."""
    need_program("swig", "swig")
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    need_program(compiler, "gcc (or build-essential)")
    python_h = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    if not os.path.exists(python_h):
        sys.exit(f"rshare: {python_h} is missing (the headers of {sys.executable}): "
                 f"apt-get install python3-dev")


class BuildExt(build_ext):
    """Build librshare first when no installed one is used, and run SWIG into
    the build directory (setuptools' own SWIG step writes the wrapper next
    to the .i file, into the source tree)."""

    def run(self):
        check_build_tools()
        if LIBDIR is None:
            self.build_bundled_library()
        super().run()

    def build_bundled_library(self):
        """librshare.so.1 from this tree, linked into the module with the
        RUNPATH $ORIGIN and copied beside it into the wheel."""
        cmake = need_program("cmake", "cmake")
        out = os.path.abspath(os.path.join(self.build_temp, "librshare"))
        self.spawn([cmake, "-S", ROOT, "-B", out, "-DBUILD_TESTING=OFF",
                    "-DRSHARE_BINDINGS=OFF", "-DRSHARE_PARTS=", "-DCMAKE_BUILD_TYPE=Release"])
        self.spawn([cmake, "--build", out, "--target", "rshare", "-j", str(os.cpu_count() or 1)])
        library = os.path.join(out, "lib", SONAME)
        for ext in self.extensions:
            ext.library_dirs = [os.path.dirname(library)]
            ext.runtime_library_dirs = ["$ORIGIN"]
        package_dir = os.path.join(self.build_lib, "rshare")
        os.makedirs(package_dir, exist_ok=True)
        shutil.copyfile(library, os.path.join(package_dir, SONAME))

    def swig_sources(self, sources, extension):
        out, rest = [], []
        for source in sources:
            (rest if source.endswith(".i") else out).append(source)
        os.makedirs(self.build_temp, exist_ok=True)
        for interface in rest:
            wrapper = os.path.join(self.build_temp, "rsharePYTHON_wrap.c")
            self.spawn(["swig", "-python", "-builtin", "-threads", "-interface", "_rshare",
                        "-I" + os.path.join(ROOT, "swig"),
                        "-I" + os.path.join(ROOT, "capi", "include"),
                        "-outdir", self.build_temp, "-o", wrapper, interface])
            out.insert(0, wrapper)
        return out


def wheel_command():
    """bdist_wheel, named explicitly: the backend (packaging/pep517) may
    have found `wheel` outside this interpreter's own site directories."""
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        return {}
    return {"bdist_wheel": bdist_wheel}


LIBDIR = installed_libdir()
BUILD_BASE = build_base(LIBDIR)
os.makedirs(BUILD_BASE, exist_ok=True)  # egg_info's directory must exist

setup(
    version=version(),
    ext_modules=[Extension(
        "rshare._rshare",
        sources=[SWIG_INTERFACE, *C_SOURCES],
        include_dirs=[os.path.join("capi", "include"), os.path.join("bindings", "python", "ext")],
        library_dirs=[LIBDIR] if LIBDIR else [],
        libraries=["rshare"],
        runtime_library_dirs=[LIBDIR] if LIBDIR and LIBDIR not in SYSTEM_DIRS else [],
        depends=[HEADER, os.path.join("bindings", "python", "ext", "pymodule.h"),
                 os.path.join("swig", "python", "rshare_python.i")],
    )],
    cmdclass={"build_ext": BuildExt, **wheel_command()},
    options={"build": {"build_base": BUILD_BASE},
             "egg_info": {"egg_base": BUILD_BASE}},
)
