# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Installing the package: `cmake --install` (into the interpreter's layout
for the install-time prefix) and `pip install` (pyproject.toml + setup.py,
offline, with Debian's setuptools), each with package metadata."""

import os
import shutil
import subprocess
import sys

import pytest

import rshare

VERSION = rshare.__version__  # the build tree's (the C library's version)
BUILD = os.environ.get("RSHARE_BUILD_DIR")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_build = pytest.mark.skipif(not BUILD, reason="needs RSHARE_BUILD_DIR (set by ctest)")

USE_IT = ("import rshare, os, importlib.metadata as md\n"
          "assert rshare.__file__.startswith(os.environ['PYTHONPATH']), rshare.__file__\n"
          "with rshare.open('sim0') as d, d.alloc_pd() as p:\n"
          "    assert d.import_pd(p.export()).handle == p.handle\n"
          "print(rshare.__version__, md.version('rshare'))\n")


def clean_env(site, **extra):
    """Only the installed tree, found through the module's RUNPATH, not the
    build tree. A sanitized build's runtimes stay preloaded (see the
    top-level CMakeLists.txt): they change nothing about where rshare is found."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(site),
           "PYTHONNOUSERSITE": "1", **extra}
    for var in ("LD_PRELOAD", "ASAN_OPTIONS"):
        if var in os.environ:
            env[var] = os.environ[var]
    return env


def run_python(code, env, cwd):
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, cwd=str(cwd))


def cmake_install(prefix, destdir=None):
    cmake = shutil.which("cmake")
    assert cmake, "cmake not on PATH"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if destdir:
        env["DESTDIR"] = str(destdir)
    proc = subprocess.run([cmake, "--install", BUILD, "--prefix", str(prefix),
                           "--component", "python"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_build
def test_cmake_installed_package_imports_and_works(tmp_path):
    prefix = tmp_path / "prefix"
    cmake_install(prefix)
    # Any prefix but /usr and /usr/local: the standard layout.
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" \
        / "site-packages"
    pkg = site / "rshare"
    assert any(f.startswith("_rshare.") and f.endswith(".so") for f in os.listdir(pkg))
    assert (pkg / "py.typed").exists() and (pkg / "_rshare.pyi").exists()
    assert (site / f"rshare-{VERSION}.dist-info" / "METADATA").exists()
    # The C library is needed too: install everything, then use it.
    cmake = shutil.which("cmake")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    subprocess.run([cmake, "--install", BUILD, "--prefix", str(prefix)], check=True,
                   capture_output=True, timeout=60, env=env)
    env = clean_env(site)
    proc = run_python(USE_IT, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [VERSION, VERSION]
    maps = run_python("import rshare; print(open('/proc/self/maps').read())", env, tmp_path)
    libs = {line.split()[-1] for line in maps.stdout.splitlines() if "librshare.so" in line}
    assert libs and all(lib.startswith(str(prefix)) for lib in libs), libs


@needs_build
@pytest.mark.skipif(not os.path.exists("/usr/lib/python3/dist-packages"),
                    reason="Debian's interpreter layout only")
def test_cmake_install_prefix_usr_uses_debians_dist_packages(tmp_path):
    """--prefix /usr goes where Debian's /usr/bin/python3 looks, whatever
    prefix the build was configured with (decided at install time)."""
    cmake_install("/usr", destdir=tmp_path)
    dist = tmp_path / "usr" / "lib" / "python3" / "dist-packages"
    assert (dist / "rshare" / "__init__.py").exists(), list(tmp_path.rglob("__init__.py"))
    assert (dist / f"rshare-{VERSION}.dist-info" / "METADATA").exists()
    searched = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.path)"],
                              capture_output=True, text=True).stdout
    assert "'/usr/lib/python3/dist-packages'" in searched
    cmake_install("/usr/local", destdir=tmp_path)
    local = tmp_path / "usr" / "local" / "lib" / \
        f"python{sys.version_info.major}.{sys.version_info.minor}" / "dist-packages"
    assert (local / "rshare" / "__init__.py").exists()
    assert f"'/usr/local/lib/python{sys.version_info.major}.{sys.version_info.minor}" \
           f"/dist-packages'" in searched


def pip_install(target, tmp_path, **env_extra):
    env = dict(os.environ, RSHARE_PY_BUILD_BASE=str(tmp_path / "pybuild"),
               PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **env_extra)
    env.pop("LD_PRELOAD", None)  # the compiler is not to run with sanitizer runtimes
    env.pop("PYTHONPATH", None)
    if "RSHARE_LIBDIR" not in env_extra:
        env.pop("RSHARE_LIBDIR", None)
    return subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--no-index",
                           "--no-build-isolation", "--target", str(target), "."],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@needs_build
def test_pip_install_offline_with_metadata(tmp_path):
    """`pip install --no-index --no-build-isolation --target DIR .` from the
    repository root builds the module against the build tree's library."""
    target = tmp_path / "target"
    proc = pip_install(target, tmp_path, RSHARE_LIBDIR=os.path.join(BUILD, "lib"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (target / f"rshare-{VERSION}.dist-info" / "RECORD").exists()  # pip can uninstall it
    assert (target / "rshare" / "py.typed").exists()
    # SWIG's output and the build files stay out of the source tree.
    assert not [n for n in os.listdir(os.path.join(ROOT, "swig")) if n.endswith("_wrap.c")]
    assert (tmp_path / "pybuild").is_dir()
    proc = run_python(USE_IT, clean_env(target), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [VERSION, VERSION]


@needs_build
def test_pip_install_against_an_installed_library_through_pkg_config(tmp_path):
    """Without RSHARE_LIBDIR, setup.py links the librshare pkg-config names
    (here an install in a temporary prefix, as a system one would be)."""
    prefix = tmp_path / "prefix"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for component in ("lib", "dev"):
        subprocess.run([shutil.which("cmake"), "--install", BUILD, "--prefix", str(prefix),
                        "--component", component], check=True, capture_output=True,
                       timeout=60, env=env)
    pcdirs = [str(p.parent) for p in prefix.rglob("rshare.pc")]
    assert pcdirs, "the dev component installs rshare.pc"
    target = tmp_path / "target"
    proc = pip_install(target, tmp_path, PKG_CONFIG_PATH=pcdirs[0])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_python(USE_IT + "import re\n"
                      "maps = open('/proc/self/maps').read()\n"
                      "print(sorted({l.split()[-1] for l in maps.splitlines() "
                      "if 'librshare.so' in l}))\n", clean_env(target), tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [VERSION, VERSION]
    assert str(prefix) in lines[1] and BUILD not in lines[1], lines[1]
