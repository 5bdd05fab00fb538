# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""mypy --strict is clean on the package and on correct user code (issue 14):
the package ships py.typed and a stub of the compiled module."""

import os
import shutil
import subprocess

import pytest

import rshare

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(rshare.__file__)))

USER_CODE = '''
import socket
from typing import Tuple

import rshare


def share(dev: rshare.Device, sock: socket.socket) -> int:
    with dev.alloc_pd() as pd:
        rshare.send(sock, dev, pd.export())
        handle: int = pd.handle
    return handle


def worker(dev: rshare.Device, blob: bytes) -> int:
    with dev, dev.import_pd(blob) as pd:
        return pd.handle


def describe(exc: rshare.Error) -> str:
    code: int = exc.code
    name: str = exc.name
    return f"{name} ({code}), errno {exc.errno}: {exc}"


def main() -> None:
    try:
        with rshare.open("sim0") as dev:
            var = dev.import_var(dev.alloc_var().export())
            view: memoryview = var.map()
            view[0] = 1
            attrs: Tuple[int, int, int] = var.attrs()
            var.unimport()
            print(rshare.inspect(dev.alloc_pd().export())["kind"], attrs,
                  [d.name for d in rshare.devices()], rshare.to_text(b""))
            got, payload = rshare.recv(socket.socket())
            with got:
                print(len(payload), got.fd, got.closed, rshare.kind(payload))
    except rshare.NotFound as exc:
        print(describe(exc))
    except rshare.Error as exc:
        print(exc.code + 1, exc.name.lower())
'''


def mypy(tmp_path, *args):
    exe = shutil.which("mypy")
    assert exe, "mypy is not installed (Debian package mypy, see tools/quickstart.sh)"
    env = dict(os.environ, MYPYPATH=PACKAGE_PARENT)
    env.pop("LD_PRELOAD", None)  # a sanitized build's runtimes are not mypy's
    proc = subprocess.run([exe, "--strict", "--no-incremental",
                           "--cache-dir", str(tmp_path / "cache"), *args],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_mypy_strict_on_user_code(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(USER_CODE)
    code, out = mypy(tmp_path, str(script))
    assert code == 0, out


def test_mypy_strict_on_the_package(tmp_path):
    code, out = mypy(tmp_path, "-p", "rshare")
    assert code == 0, out


def test_mypy_catches_real_mistakes(tmp_path):
    """The check is not vacuous: wrong user code is reported."""
    script = tmp_path / "wrong.py"
    script.write_text("import rshare\n"
                      "dev: rshare.Device = rshare.open('sim0')\n"
                      "pd = dev.import_pd(42)\n"
                      "name: int = pd.device.name\n")
    code, out = mypy(tmp_path, str(script))
    assert code == 1, out
    assert "wrong.py:3" in out and "wrong.py:4" in out, out


# The broker and asyncio snippets of the docs (rshare/_broker.py, rshare/aio.py,
# docs/python.md): attach results are typed, share.pd / share.var are not
# Optional.
BROKER_CODE = '''
import asyncio
from typing import List

import rshare
import rshare.aio


def publisher() -> None:
    with rshare.serve():
        with rshare.open() as dev, dev.alloc_pd() as pd, dev.alloc_var() as var:
            with rshare.publish("team/exp1", dev, pd=pd, var=var) as share:
                print(share.name, share.published)


def attacher() -> int:
    with rshare.attach("team/exp1", timeout=10) as share:
        share.var.map()[0:4] = b"ping"
        handle: int = share.pd.handle
        waiting: List[str] = [w["name"] for w in rshare.waiting()]
        print(waiting, share.device.name, share.blobs)
    return handle


async def main() -> None:
    async with asyncio.timeout(5):
        share = await rshare.aio.attach("team/exp1")
    with share:
        share.var.map()[0:4] = b"ping"
        print(share.pd.handle)
    dev, payload = await rshare.aio.recv(0)
    with dev:
        print(len(payload))
'''


def test_mypy_strict_on_broker_snippets(tmp_path):
    script = tmp_path / "snippets.py"
    script.write_text(BROKER_CODE)
    code, out = mypy(tmp_path, str(script))
    assert code == 0, out
