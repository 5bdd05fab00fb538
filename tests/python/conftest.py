# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Shared fixtures: a fresh simulated device per test, and a helper that
runs Python worker scripts in real child processes."""

import os
import subprocess
import sys
import tempfile

import pytest

import rshare

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "_workers.py")


@pytest.fixture
def dev():
    """A new sim0 context (its own object table), closed after the test."""
    device = rshare.open("sim0")
    yield device
    if not device.closed:
        try:
            device.close()
        except rshare.Busy:
            pass  # the test left objects; they release the device when collected


@pytest.fixture
def endpoint():
    """A broker socket path in a fresh directory other uids can reach."""
    d = tempfile.mkdtemp(prefix="rshare-py-")
    os.chmod(d, 0o755)
    yield os.path.join(d, "b.sock")
    subprocess.run(["rm", "-rf", d], check=False)


def run_worker(*args, pass_fds=(), env_extra=None, timeout=30):
    """Run `_workers.py args...` in a fresh interpreter; return its stdout
    lines. The worker prints one line per check; a failure raises here with
    its stderr."""
    env = dict(os.environ)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, WORKERS, *map(str, args)], pass_fds=pass_fds,
                          env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"worker {args[0]} failed (rc {proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc.stdout.splitlines()
