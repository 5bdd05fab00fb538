# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Build the compiled module rshare._rshare for pip (metadata: pyproject.toml).

The module is SWIG's wrapper of swig/rshare.i plus the hand-written C in
bindings/python/ext/, linked against librshare.so.1:
  - RSHARE_LIBDIR=<dir>: the library in <dir> (e.g. a CMake build tree's
    build/lib), which the module then finds through its RUNPATH;
  - otherwise `pkg-config rshare` if it knows the library, else the system
    linker's default directories (librshare installed in /usr or /usr/local).
Temporary build files go to RSHARE_PY_BUILD_BASE (default: build-python/),
never into a CMake build directory.
"""

import ctypes.util
import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join("capi", "include", "rshare", "rshare.h")
SWIG_INTERFACE = os.path.join("swig", "rshare.i")
# Every hand-written C file of the module (the CMake build lists the same).
C_SOURCES = sorted(os.path.relpath(p, ROOT)
                   for p in glob.glob(os.path.join(ROOT, "bindings", "python", "ext", "*.c")))
BUILD_BASE = os.environ.get("RSHARE_PY_BUILD_BASE", "build-python")


def version() -> str:
    """MAJOR.MINOR.PATCH from the header, the library's own version."""
    with open(os.path.join(ROOT, HEADER)) as f:
        text = f.read()
    parts = [re.search(rf"#define RSHARE_VERSION_{p} (\d+)", text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def library_dirs() -> list:
    libdir = os.environ.get("RSHARE_LIBDIR")
    if libdir:
        return [os.path.abspath(libdir)]
    if shutil.which("pkg-config"):
        proc = subprocess.run(["pkg-config", "--variable=libdir", "rshare"],
                              capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip():
            return [os.path.normpath(proc.stdout.strip())]
    if ctypes.util.find_library("rshare") is None:
        sys.exit("rshare: librshare is not installed and neither RSHARE_LIBDIR nor "
                 "pkg-config names one: build it (cmake -S . -B build && cmake --build "
                 "build) and set RSHARE_LIBDIR=$PWD/build/lib, or install it")
    return []


class BuildExt(build_ext):
    """Run SWIG into the build directory (setuptools' own SWIG step writes
    the wrapper next to the .i file, into the source tree)."""

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


LIBDIRS = library_dirs()
os.makedirs(BUILD_BASE, exist_ok=True)  # egg_info's directory must exist
SYSTEM_DIRS = {"/usr/lib", "/lib", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"}

setup(
    version=version(),
    ext_modules=[Extension(
        "rshare._rshare",
        sources=[SWIG_INTERFACE, *C_SOURCES],
        include_dirs=[os.path.join("capi", "include"), os.path.join("bindings", "python", "ext")],
        library_dirs=LIBDIRS,
        libraries=["rshare"],
        runtime_library_dirs=[d for d in LIBDIRS if d not in SYSTEM_DIRS],
        depends=[HEADER, os.path.join("bindings", "python", "ext", "pymodule.h"),
                 os.path.join("swig", "python", "rshare_python.i")],
    )],
    cmdclass={"build_ext": BuildExt},
    options={"build": {"build_base": BUILD_BASE},
             "egg_info": {"egg_base": BUILD_BASE}},
)
