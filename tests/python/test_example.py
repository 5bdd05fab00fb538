"""The newcomer example and the benchmark script run headless."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*argv, timeout=60):
    # Absolute PYTHONPATH entries: the scripts run from the repository root.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


def test_example_runs_top_to_bottom():
    proc = run(os.path.join(ROOT, "examples", "python_share.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for slot in range(3):
        assert f"owner: slot {slot} now reads 'worker {slot} sees PD " in out
    assert "owner: saw 3 of 3 workers write" in out
    assert "after free, import says RSHARE_E_NOT_FOUND" in out


def test_benchmark_script_smoke():
    # A smoke run only: it must work end to end; its timings are not judged here.
    proc = run(os.path.join(ROOT, "tools", "bench_python.py"), "--quick")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cffi ABI mode" in proc.stdout and "socket.send_fds by hand" in proc.stdout
