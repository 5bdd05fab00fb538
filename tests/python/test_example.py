# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The newcomer example and the benchmark script run headless."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*argv, timeout=60):
    # Absolute PYTHONPATH entries: the scripts run from the repository root.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


EXAMPLE = os.path.join(ROOT, "examples", "python_share.py")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_example_runs_top_to_bottom(method):
    proc = run(EXAMPLE, "--start-method", method)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == "", proc.stderr  # no worker traceback, whatever the method
    out = proc.stdout
    assert f"starting 3 workers with {method}" in out
    for slot in range(3):
        assert f"owner: slot {slot} now reads 'worker {slot} sees PD " in out
    assert "owner: saw 3 of 3 workers write" in out
    assert "after free, import says RSHARE_E_NOT_FOUND" in out


def test_example_exits_non_zero_when_a_worker_fails():
    # The example's own main(), with a worker that fails (fork runs the
    # patched function in the children).
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("python_share", {EXAMPLE!r})
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        def broken(dev, pd_blob, var_blob, slot):
            if slot == 1:
                raise RuntimeError("worker 1 broke")
            real(dev, pd_blob, var_blob, slot)
        real, example.worker = example.worker, broken
        sys.argv = ["python_share.py", "--start-method", "fork"]
        example.main()
    """)
    proc = run("-c", code)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "RuntimeError: worker 1 broke" in proc.stderr
    assert "worker(s) [1] failed" in proc.stderr


def test_benchmark_script_smoke():
    # A smoke run only: it must work end to end; its timings are not judged here.
    proc = run(os.path.join(ROOT, "tools", "bench_python.py"), "--quick")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cffi ABI mode" in proc.stdout and "socket.send_fds by hand" in proc.stdout
