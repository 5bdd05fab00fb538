"""`cmake --install` puts an importable package in the site directory."""

import os
import shutil
import subprocess
import sys

import pytest

BUILD = os.environ.get("RSHARE_BUILD_DIR")


@pytest.mark.skipif(not BUILD, reason="needs RSHARE_BUILD_DIR (set by ctest)")
def test_installed_package_imports_and_works(tmp_path):
    cmake = shutil.which("cmake")
    assert cmake, "cmake not on PATH"
    prefix = tmp_path / "prefix"
    proc = subprocess.run([cmake, "--install", BUILD, "--prefix", str(prefix)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = [os.path.join(root) for root, _, files in os.walk(prefix)
             if "__init__.py" in files and root.endswith(os.sep + "rshare")]
    assert len(found) == 1, found
    site = os.path.dirname(found[0])
    assert site.endswith("-packages"), site
    assert any(f.startswith("_rshare.") and f.endswith(".so") for f in os.listdir(found[0]))
    assert os.path.exists(os.path.join(found[0], "py.typed"))
    # A clean environment: only the installed tree, found through the
    # module's install RPATH (the prefix's libdir), not the build tree.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": site,
           "PYTHONNOUSERSITE": "1"}
    # A sanitized build's runtimes must still be preloaded (see the top-level
    # CMakeLists.txt); they change nothing about where rshare is found.
    for var in ("LD_PRELOAD", "ASAN_OPTIONS"):
        if var in os.environ:
            env[var] = os.environ[var]
    code = ("import rshare, os\n"
            "assert rshare.__file__.startswith(os.environ['PYTHONPATH']), rshare.__file__\n"
            "with rshare.open('sim0') as d, d.alloc_pd() as p:\n"
            "    assert d.import_pd(p.export()).handle == p.handle\n"
            "print(rshare.__version__)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1.1.0"
    maps = subprocess.run([sys.executable, "-c",
                           "import rshare, sys; print(open('/proc/self/maps').read())"],
                          env=env, capture_output=True, text=True, timeout=60)
    libs = {line.split()[-1] for line in maps.stdout.splitlines() if "librshare.so" in line}
    assert libs and all(lib.startswith(str(prefix)) for lib in libs), libs
