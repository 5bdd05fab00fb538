# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Sharing across real processes on the simulated device.

A parent shares its device context, a PD and a VAR; every worker imports
them, checks handles and attributes, writes its pid into its slot of the
VAR page, and the parent reads every write through its own mapping.
"""

import json
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import rshare
import _workers
from conftest import WORKERS, run_worker


@pytest.fixture
def shared(dev):
    """A device with a PD and a mapped VAR, plus what workers must see."""
    pd = dev.alloc_pd()
    var = dev.alloc_var()
    mv = var.map()
    mv[:] = bytes(len(mv))
    expect = _workers.expectation(dev, pd, var)
    yield dev, pd, var, mv, expect
    for obj in (var, pd):
        if obj.live:
            obj.free()


def test_pass_fds_subprocess(shared):
    dev, pd, var, mv, expect = shared
    out = run_worker("passfd", dev.fd, rshare.to_text(pd.export()), rshare.to_text(var.export()),
                     json.dumps(expect), 3, pass_fds=[dev.fd])
    result = json.loads(out[-1])
    assert result["slot"] == 3
    assert _workers.read_slot(mv, 3) == result["pid"] != os.getpid()
    # The other slots are untouched and the parent's objects still work.
    assert _workers.read_slot(mv, 0) == 0
    assert pd.handle == expect["pd_handle"]


def test_socketpair_send_recv(shared):
    dev, pd, var, mv, expect = shared
    parent_sock, child_sock = socket.socketpair()
    with parent_sock, child_sock:
        proc = subprocess.Popen([sys.executable, WORKERS, "socket", str(child_sock.fileno()), "5"],
                                pass_fds=[child_sock.fileno()], stdout=subprocess.PIPE, text=True)
        child_sock.close()
        payload = json.dumps({"pd": pd.export().hex(), "var": var.export().hex(),
                              "expect": expect}).encode()
        rshare.send(parent_sock, dev, payload)
        # The worker answers with the device it received: a third handle on
        # the same object table, through which the parent sees the same PD.
        back, answer = rshare.recv(parent_sock)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    result = json.loads(answer)
    assert json.loads(out.splitlines()[-1]) == result
    assert _workers.read_slot(mv, 5) == result["pid"]
    with back:
        assert back.fd != dev.fd and back.guid == dev.guid
        with back.import_pd(pd.export()) as again:
            assert again.handle == pd.handle


def test_spawn_pool_of_four(shared):
    dev, pd, var, mv, expect = shared
    pd_blob, var_blob = pd.export(), var.export()
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.map(_workers.pool_work,
                           [(dev, pd_blob, var_blob, expect, slot) for slot in range(4)])
    assert sorted(r["slot"] for r in results) == [0, 1, 2, 3]
    for r in results:
        assert _workers.read_slot(mv, r["slot"]) == r["pid"]
    assert len({r["pid"] for r in results} | {os.getpid()}) >= 2


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_device_pickles_to_process(shared, method):
    dev, pd, var, mv, expect = shared
    ctx = mp.get_context(method)
    queue = ctx.Queue()
    slot = {"spawn": 10, "forkserver": 11, "fork": 12}[method]
    proc = ctx.Process(target=_workers.process_work,
                       args=(dev, pd.export(), var.export(), expect, slot, queue))
    proc.start()
    result = queue.get(timeout=30)
    proc.join(timeout=30)
    assert proc.exitcode == 0
    assert "error" not in result, result
    assert _workers.read_slot(mv, slot) == result["pid"] == proc.pid


def test_not_found_after_free_and_unimport_still_ok(shared):
    dev, pd, var, mv, expect = shared
    blob = pd.export()
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_workers.hold_across_free, args=(dev, blob, there))
    proc.start()
    assert here.poll(30) and here.recv() == "imported"
    pd.free()
    with pytest.raises(rshare.NotFound):  # the parent sees the same
        dev.import_pd(blob)
    here.send("freed")
    assert here.poll(30)
    result = here.recv()
    proc.join(timeout=30)
    assert proc.exitcode == 0
    assert result == {"reimport": "RSHARE_E_NOT_FOUND", "message": result.get("message"),
                      "unimport": "ok", "second_unimport": "RSHARE_E_STALE"}, result
    assert result["message"].startswith("rshare_pd_import")


def test_worker_killed_mid_way(shared):
    dev, pd, var, mv, expect = shared
    blob = pd.export()
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_workers.hammer, args=(dev, blob, var.export(), there))
    proc.start()
    assert here.poll(30) and here.recv() == "running"
    time.sleep(0.05)  # let it loop through the table's lock many times
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=30)
    assert proc.exitcode == -signal.SIGKILL
    assert _workers.read_slot(mv, 0) == 0xDEAD

    # The parent keeps working: run in a thread so a dead lock fails the
    # test instead of hanging it.
    done = {}

    def keep_working():
        for _ in range(200):
            dev.import_pd(blob).unimport()
        with dev.alloc_pd() as fresh:
            done["fresh"] = dev.import_pd(fresh.export()).handle == fresh.handle
        var.unmap()
        done["page"] = _workers.read_slot(var.map(), 0)
        pd.free()
        done["ok"] = True

    worker = threading.Thread(target=keep_working, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "parent blocked after a worker was killed"
    assert done == {"fresh": True, "page": 0xDEAD, "ok": True}


def test_text_blob_through_environment(shared):
    dev, pd, var, mv, expect = shared
    env = {"RSHARE_TEST_PD": rshare.to_text(pd.export()),
           "RSHARE_TEST_VAR": rshare.to_text(var.export()),
           "RSHARE_TEST_EXPECT": json.dumps(expect)}
    assert env["RSHARE_TEST_PD"].startswith("rshare:")
    out = run_worker("env", dev.fd, 7, pass_fds=[dev.fd], env_extra=env)
    assert _workers.read_slot(mv, 7) == json.loads(out[-1])["pid"]


def test_blob_from_another_context_is_refused(dev):
    with rshare.open("sim0") as other, other.alloc_pd() as foreign, other.alloc_var() as fvar:
        with pytest.raises(rshare.DeviceMismatch) as info:
            dev.import_pd(foreign.export())
        assert info.value.name == "RSHARE_E_DEVICE_MISMATCH"
        assert info.value.code == rshare._rshare.RSHARE_E_DEVICE_MISMATCH
        assert str(info.value).startswith("rshare_pd_import")
        with pytest.raises(rshare.DeviceMismatch):
            dev.import_var(fvar.export())
        # Same table, but imported through a second context: accepted.
        with rshare.Device.from_fd(other.fd) as twin, twin.import_pd(foreign.export()) as p:
            assert p.handle == foreign.handle


def test_corrupted_bytes_are_refused(dev):
    with dev.alloc_pd() as pd:
        blob = bytearray(pd.export())
        for index in (0, 12, len(blob) - 1):  # magic, handle, checksum
            bad = bytearray(blob)
            bad[index] ^= 0x40
            with pytest.raises(rshare.BlobCorrupt) as info:
                dev.import_pd(bytes(bad))
            assert isinstance(info.value, rshare.BlobError)
            assert info.value.code == rshare._rshare.RSHARE_E_BLOB_CORRUPT
        with pytest.raises(rshare.BlobCorrupt):
            dev.import_pd(bytes(blob[:-1]))
        with pytest.raises(rshare.BlobCorrupt):
            dev.import_pd(b"")
        # Still importable once intact.
        with dev.import_pd(bytes(blob)) as ok:
            assert ok.handle == pd.handle
