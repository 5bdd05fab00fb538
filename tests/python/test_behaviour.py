# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Python that behaves: the user's exception always leaves a with block
(a failed cleanup is noted on it, never raised in its place); Devices,
Brokers and Shares dropped while open give a ResourceWarning (python -X
dev); serve() and publish() run again in one process (a notebook cell run
twice) give back the broker or replace the share instead of Busy."""

import subprocess
import sys
import textwrap

import pytest

import rshare
from rshare import _broker


def notes(exc):
    return "\n".join(getattr(exc, "__notes__", []))


def test_user_exception_survives_failing_cleanups():
    buf = bytearray(4096)
    with pytest.raises(KeyError, match="mine") as info:
        with rshare.open("sim0") as dev, dev.alloc_pd() as pd:
            mr = pd.reg_mr(buf)  # keeps the PD, and so the device, busy
            raise KeyError("mine")
    text = notes(info.value)
    assert "PD.__exit__ could not release it: Busy" in text, text
    assert "Device.__exit__ could not release it: Busy" in text, text
    # Nothing was lost: the objects are still there to be released.
    assert pd.live and not dev.closed
    mr.free()
    pd.free()
    dev.close()


def test_cleanup_failure_without_user_exception_is_raised():
    buf = bytearray(4096)
    with rshare.open("sim0") as dev:
        with pytest.raises(rshare.Busy):
            with dev.alloc_pd() as pd:
                mr = pd.reg_mr(buf)
        mr.free()
        pd.free()


def test_python_level_exits_note_instead_of_replacing(endpoint, monkeypatch):
    def failing(_handle):
        raise rshare.Busy("withdraw failed", rshare.Busy.code)

    with rshare.serve(endpoint), rshare.open("sim0") as dev, dev.alloc_pd() as pd:
        share = rshare.publish("py/noted", dev, pd=pd, endpoint=endpoint)
        monkeypatch.setattr(_broker._c, "broker_withdraw", failing)
        with pytest.raises(ZeroDivisionError) as info:
            with share:
                1 / 0
        assert "the cleanup failed: Busy: withdraw failed" in notes(info.value)
        with pytest.raises(rshare.Busy):  # no exception in flight: raised
            with share:
                pass
        monkeypatch.undo()
        share.withdraw()
        with rshare.publish("py/noted", dev, pd=pd, endpoint=endpoint):
            with pytest.raises(ValueError) as info:
                with rshare.attach("py/noted", endpoint=endpoint) as attached:
                    mr = attached.pd.reg_mr(bytearray(64))  # makes the unimport Busy
                    raise ValueError("user")
            assert "the cleanup failed: Busy" in notes(info.value), notes(info.value)
            mr.free()
            attached.close()


WARN_SCRIPT = '''
import gc, sys, rshare
ep = sys.argv[1]
dev = rshare.open("sim0")
del dev
broker = rshare.serve(ep)
dev = rshare.open("sim0")
share = rshare.publish("py/dropped", dev, endpoint=ep)
del share
del broker
dev.close()
gc.collect()
print("well-behaved code follows", file=sys.stderr, flush=True)
with rshare.serve(ep), rshare.open("sim0") as dev, dev.alloc_pd() as pd:
    with rshare.publish("py/kept", dev, pd=pd, endpoint=ep):
        with rshare.attach("py/kept", endpoint=ep) as att:
            assert att.pd.handle == pd.handle
gc.collect()
'''


def test_resource_warnings_under_dev_mode(endpoint):
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", WARN_SCRIPT, endpoint],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    dropped, rest = proc.stderr.split("well-behaved code follows")
    assert "ResourceWarning: unclosed rshare.Device" in dropped, dropped
    assert "ResourceWarning: unwithdrawn <rshare.Share 'py/dropped'" in dropped, dropped
    assert "ResourceWarning: unstopped <rshare.Broker" in dropped, dropped
    assert "Warning" not in rest, rest


def test_serve_and_publish_run_again(endpoint):
    with rshare.open("sim0") as dev, dev.alloc_pd() as pd, dev.alloc_var() as var:
        broker = rshare.serve(endpoint)
        assert rshare.serve(endpoint) is broker  # the cell run again
        first = rshare.publish("nb/cell", dev, pd=pd, endpoint=endpoint)
        second = rshare.publish("nb/cell", dev, pd=pd, var=var, endpoint=endpoint)
        assert not first.published and second.published
        [entry] = rshare.shares(endpoint)
        assert entry["name"] == "nb/cell" and entry["blobs"] == ["pd", "var"]
        # Another process still gets Busy: only this process's own share
        # is replaced.
        code = textwrap.dedent('''
            import sys, rshare
            with rshare.open("sim0") as dev:
                try:
                    rshare.publish("nb/cell", dev, endpoint=sys.argv[1])
                except rshare.Busy:
                    print("busy")
            ''')
        out = subprocess.run([sys.executable, "-c", code, endpoint], capture_output=True,
                             text=True, timeout=30)
        assert out.stdout.strip() == "busy", out.stderr
        second.withdraw()
        broker.stop()
        # Stopped: serve() starts a new one.
        again = rshare.serve(endpoint)
        assert again is not broker and again.running
        again.stop()
