# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The 1.1 objects in Python: memory regions (PD.reg_mr/import_mr) and
device memory (Device.alloc_dm/import_dm), capabilities, the version, the
native addresses, scalar blob fields; in one process and across real
processes (a child imports the PD, then the MR into it; device memory
written by one process is read by another)."""

import mmap
import os
import subprocess
import sys

import pytest

import rshare

CHILD = r"""
import os, sys
import rshare
fd, pd_text, mr_text, dm_text, lkey, rkey = sys.argv[1:7]
with rshare.Device.from_fd(int(fd)) as dev, dev.import_pd(pd_text) as pd:
    with pd.import_mr(mr_text) as mr:
        assert (mr.lkey, mr.rkey) == (int(lkey), int(rkey)), mr.attrs()
        assert mr.imported and mr.pd is pd and mr.device is dev
        try:
            pd.unimport()
        except rshare.Busy:
            pass
        else:
            raise AssertionError("a PD with a live MR was released")
    with dev.import_dm(dm_text) as dm:
        print(dm.read(0, 32).rstrip(b"\0").decode())
        dm.write(64, b"child %d" % os.getpid())
"""


def test_caps_version_and_natives(dev):
    assert rshare.version_info == (1, 2, 0)
    assert rshare.version_info.minor == 2
    assert "%d.%d.%d" % rshare.version_info == rshare.__version__
    caps = dev.caps
    assert isinstance(caps, rshare.Caps)
    assert rshare.Caps.PD in caps and rshare.Caps.VAR in caps
    assert rshare.Caps.NATIVE not in caps  # sim0
    with pytest.raises(rshare.Unsupported, match="sim0"):
        dev.native_address()
    with dev.alloc_pd() as pd:
        with pytest.raises(rshare.Unsupported):
            pd.native_address()
    with dev.alloc_var() as var:
        assert var.handle == rshare.inspect(var.export())["handle"]
        with pytest.raises(rshare.Unsupported):
            var.native_address()


@pytest.fixture
def caps_mr_dm(dev):
    if rshare.Caps.MR not in dev.caps or rshare.Caps.DM not in dev.caps:
        pytest.skip("sim0 lacks MRs or device memory")
    return dev


def test_mr_register_export_import(caps_mr_dm):
    dev = caps_mr_dm
    with dev.alloc_pd() as pd:
        buf = bytearray(8192)
        mr = pd.reg_mr(buf, rshare.Access.LOCAL_WRITE | rshare.Access.REMOTE_READ)
        attrs = mr.attrs()
        assert attrs.length == 8192 and attrs.access == rshare.Access.LOCAL_WRITE | \
            rshare.Access.REMOTE_READ
        assert isinstance(attrs.access, rshare.Access)
        assert (mr.addr, mr.length, mr.lkey, mr.rkey) == attrs[:4]
        assert mr.pd is pd and mr.device is dev and not mr.imported
        # The buffer is held while registered: a bytearray cannot be resized.
        with pytest.raises(BufferError):
            buf.append(0)
        blob = mr.export()
        info = rshare.inspect(blob)
        assert info["kind"] == "mr" and info["lkey"] == mr.lkey and info["length"] == 8192
        assert info["pd_handle"] == pd.handle and info["handle"] == mr.handle
        assert rshare.kind(blob) == "mr"
        # The PD is busy while the MR lives.
        with pytest.raises(rshare.Busy, match="MR"):
            pd.free()
        with pd.import_mr(rshare.to_text(blob)) as again:
            assert again.imported and again.handle == mr.handle and again.rkey == mr.rkey
        # Only into its own PD; only MR blobs.
        with dev.alloc_pd() as other:
            with pytest.raises(rshare.DeviceMismatch):
                other.import_mr(blob)
            with pytest.raises(rshare.BlobKind):
                other.import_mr(other.export())
        with pytest.raises(TypeError):
            pd.reg_mr(b"read-only bytes")
        mr.dereg()
        assert not mr.live
        buf.append(0)  # let go after deregistration
        with pytest.raises(rshare.StaleHandleError):
            mr.dereg()
        with pytest.raises(rshare.NotFound):
            pd.import_mr(blob)


def test_mr_unimported_here_keeps_its_memory(caps_mr_dm):
    # Unimporting (or dropping) an MR registered here leaves the registration
    # live for the processes that imported it: its memory must stay exported
    # and alive, or the registration would point at memory given back.
    import gc
    import weakref

    class Buffer(bytearray):
        pass

    with caps_mr_dm.alloc_pd() as pd:
        buf = Buffer(4096)
        gone = weakref.ref(buf)
        mr = pd.reg_mr(buf)
        blob = mr.export()
        mr.unimport()
        with pytest.raises(BufferError):
            buf.append(0)  # still exported
        dropped = Buffer(4096)
        dropped_gone = weakref.ref(dropped)
        dropped_blob = pd.reg_mr(dropped).export()  # the MR object is collected at once
        del buf, dropped
        gc.collect()
        assert gone() is not None and dropped_gone() is not None
        for b in (blob, dropped_blob):  # the registrations live on; dereg them
            with pd.import_mr(b) as again:
                again.dereg()


def test_mr_on_mmap_and_memoryview(caps_mr_dm):
    with caps_mr_dm.alloc_pd() as pd:
        with mmap.mmap(-1, 4096) as mm:
            with pd.reg_mr(mm) as mr:
                assert mr.length == 4096
            # context manager: allocated here, so deregistered
            assert not mr.live
        arr = bytearray(100)
        with pd.reg_mr(memoryview(arr)[10:50]) as mr:
            assert mr.length == 40
        with pytest.raises(rshare.InvalidArgument):
            pd.reg_mr(bytearray(16), access=1 << 40)
        with pytest.raises(rshare.InvalidArgument):
            pd.reg_mr(bytearray(16), access=0x100)  # unknown flag, refused by the C side


def test_dm_read_write_bounds(caps_mr_dm):
    dev = caps_mr_dm
    with dev.alloc_dm(256) as dm:
        assert dm.length == 256 and not dm.imported
        dm.write(10, b"hello")
        assert dm.read(10, 5) == b"hello"
        assert dm.read(0, 0) == b""
        with pytest.raises(rshare.InvalidArgument, match="past the end"):
            dm.write(252, b"12345")
        assert dm.read(252, 4) == bytes(4)  # nothing written
        with pytest.raises(rshare.InvalidArgument):
            dm.read(2**64 - 1, 2)
        with pytest.raises(ValueError):
            dm.read(0, -1)
        with pytest.raises(ValueError):
            dm.write(-1, b"x")
        blob = dm.export()
        assert rshare.inspect(blob) == {**rshare.inspect(blob), "kind": "dm", "length": 256}
        with dev.import_dm(blob) as other:
            assert other.read(10, 5) == b"hello" and other.handle == dm.handle
    with pytest.raises(rshare.NotFound):
        dev.import_dm(blob)
    with pytest.raises(rshare.StaleHandleError):
        dm.read(0, 1)


def test_across_processes(caps_mr_dm):
    """A child imports the PD, then the MR into it, and checks the keys;
    it reads what this process wrote into device memory and writes back."""
    dev = caps_mr_dm
    buf = bytearray(4096)
    with dev.alloc_pd() as pd, pd.reg_mr(buf) as mr, dev.alloc_dm(128) as dm:
        dm.write(0, b"from the parent")
        args = [str(dev.fd), rshare.to_text(pd.export()), rshare.to_text(mr.export()),
                rshare.to_text(dm.export()), str(mr.lkey), str(mr.rkey)]
        res = subprocess.run([sys.executable, "-c", CHILD] + args, pass_fds=[dev.fd],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == "from the parent"
        child = dm.read(64, 32).rstrip(b"\0").decode()
        assert child.startswith("child ") and int(child.split()[1]) != os.getpid()
