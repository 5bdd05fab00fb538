# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Shared buffers from Python (since 1.2): memory registered once and used
zero-copy through the buffer protocol and DLPack, in this process and in
workers started with spawn, forkserver and fork; views that keep the
memory mapped (release refused while they live); wrong fds refused."""

import ctypes
import json
import multiprocessing as mp
import os
import socket
import tempfile

import numpy as np
import pytest

import rshare
import _workers

N = 1 << 16  # bytes
ACCESS = rshare.Access.LOCAL_WRITE | rshare.Access.REMOTE_WRITE | rshare.Access.REMOTE_READ


@pytest.fixture
def pd(dev):
    p = dev.alloc_pd()
    yield p
    if p.live:
        p.free()


def test_alloc_and_views_are_zero_copy(pd):
    assert pd.device.caps & rshare.Caps.BUF
    with pd.alloc_buffer(N, access=ACCESS) as buf:
        assert len(buf) == buf.nbytes == N and not buf.imported
        a = np.frombuffer(buf, dtype=np.uint32)
        b = np.asarray(buf)
        m = memoryview(buf)
        assert a.ctypes.data == b.ctypes.data == buf.ptr
        assert m.nbytes == N and not m.readonly and b.dtype == np.uint8
        a[:] = np.arange(N // 4, dtype=np.uint32)
        assert bytes(m[4:8]) == (1).to_bytes(4, "little")
        assert ctypes.c_uint32.from_address(buf.ptr + 8).value == 2
        attrs = buf.attrs()
        assert (attrs.addr, attrs.length, attrs.access) == (buf.ptr, N, ACCESS)
        assert buf.remote_addr(100) == buf.addr + 100
        assert rshare.kind(buf.export()) == "buf"
        assert rshare.inspect(buf.export())["mem_ino"] == os.fstat(buf.fd).st_ino
        del a, b
        m.release()


def test_dlpack_round_trip(pd):
    buf = pd.alloc_buffer(N)
    assert buf.__dlpack_device__() == (1, 0)
    x = np.from_dlpack(buf)  # ours, consumed by numpy (read-only in numpy 1.24)
    assert x.ctypes.data == buf.ptr and x.size == N and x.dtype == np.uint8
    w = np.frombuffer(buf, dtype=np.uint8)
    y = np.from_dlpack(w)  # and back: numpy's own DLPack export of our memory
    assert y.ctypes.data == buf.ptr
    w[10] = 42
    assert x[10] == y[10] == memoryview(buf)[10] == 42
    capsule = buf.__dlpack__()  # never consumed: its destructor lets go
    assert buf._exports == 3
    del capsule
    assert buf._exports == 2
    del x, y, w
    assert buf._exports == 0
    with pytest.raises(BufferError):
        buf.__dlpack__(stream=1)
    buf.free()


def test_release_is_refused_while_views_live(pd):
    buf = pd.alloc_buffer(N)
    view = np.frombuffer(buf, dtype=np.uint8)
    for release in (buf.free, buf.unimport):
        with pytest.raises(BufferError, match="view"):
            release()
    assert buf.live
    view[0] = 7  # still mapped
    del view
    buf.free()
    with pytest.raises(BufferError):
        memoryview(buf)  # released: nothing to view
    with pytest.raises(rshare.StaleHandleError):
        buf.free()


def test_var_page_supports_the_buffer_protocol(dev):
    var = dev.alloc_var()
    page = np.frombuffer(var, dtype=np.uint8)
    assert page.size == var.length
    page[:4] = [1, 2, 3, 4]
    assert bytes(var.map()[:4]) == b"\x01\x02\x03\x04"
    with pytest.raises(BufferError):
        var.unmap()
    with pytest.raises(BufferError):
        var.free()
    del page
    var.unmap()
    var.free()


def test_wrong_fd_and_late_import_are_refused(pd):
    buf = pd.alloc_buffer(N)
    blob, fd = buf.export(), os.dup(buf.fd)
    other = os.memfd_create("other", os.MFD_ALLOW_SEALING)
    os.ftruncate(other, N)
    with pytest.raises(rshare.FdMismatch, match="seals"):
        pd.import_buffer(blob, other)
    with tempfile.TemporaryFile() as f:
        f.truncate(N)
        with pytest.raises(rshare.FdMismatch, match="not a memfd"):
            pd.import_buffer(blob, f.fileno())
    os.close(other)
    twin = pd.import_buffer(blob, fd)
    assert twin.imported and twin.rkey == buf.rkey and twin.ptr != buf.ptr
    twin.unimport()
    buf.free()
    with pytest.raises(rshare.NotFound):
        pd.import_buffer(blob, fd)
    os.close(fd)


def test_send_with_extra_fds(dev):
    s0, s1 = socket.socketpair()
    r, w = os.pipe()
    rshare.send(s0, dev, b"hello", fds=[r, w])
    with pytest.raises(rshare.ProtocolError, match="recvv"):
        rshare.recv(s1)  # a receiver without fds refuses (and drops) it
    rshare.send(s0, dev, b"again", fds=[r])
    got, payload, fds = rshare.recv_fds(s1)
    assert payload == b"again" and len(fds) == 1
    assert os.fstat(fds[0]).st_ino == os.fstat(r).st_ino
    for fd in (*fds, r, w):
        os.close(fd)
    got.close()
    with pytest.raises(ValueError):
        rshare.send(s0, dev, b"x", fds=list(range(rshare._rshare.RSHARE_CHANNEL_FDS_MAX + 1)))
    s0.close()
    s1.close()


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_buffer_shared_with_a_worker(dev, pd, method):
    """The first Done-when line of issue 20 for Python: a worker receives the
    buffer, views it zero-copy at rshare_buf_ptr, sees our numbers and
    writes its own; we read them; both see the same keys."""
    first = 1000
    buf = pd.alloc_buffer(N, access=ACCESS)
    mine = np.frombuffer(buf, dtype=np.uint64)
    mine[:first] = np.arange(first, dtype=np.uint64)
    parent_end, child_end = socket.socketpair()
    ctx = mp.get_context(method)
    worker = ctx.Process(target=_workers.buffer_child, args=(child_end, first))
    worker.start()
    child_end.close()
    rshare.send(parent_end, dev, buf)
    report = json.loads(parent_end.makefile().readline())
    worker.join(30)
    assert worker.exitcode == 0
    assert report["same_address"] and report["dlpack_address"] and report["saw_parent"]
    assert report["imported"] and report["unimport_with_view"] == "refused"
    assert report["attrs"] == list(buf.attrs())[:4]  # the allocator's address and keys
    assert (mine[first:] == report["pid"]).all()
    del mine
    buf.free()
    parent_end.close()


def test_broker_publishes_and_attaches_buffers(tmp_path, pd):
    """publish(..., buf=buf) keeps the memfd with the share; attach() maps
    it and returns the buffer imported, zero-copy with numpy."""
    endpoint = str(tmp_path / "b.sock")
    buf = pd.alloc_buffer(N, access=ACCESS)
    np.frombuffer(buf, dtype=np.uint8)[:5] = list(b"named")
    with rshare.serve(endpoint):
        with rshare.publish("team/buffer", pd.device, pd=pd, buf=buf, endpoint=endpoint):
            assert rshare.shares(endpoint)[0]["blobs"] == ["pd", "buf"]
            with rshare.attach("team/buffer", timeout=5, endpoint=endpoint) as share:
                got = share.buf
                assert got is not None and got.imported and got.rkey == buf.rkey
                view = np.frombuffer(got, dtype=np.uint8)
                assert bytes(view[:5]) == b"named" and view.ctypes.data == got.ptr
                view[5] = 33
                del view
            assert memoryview(buf)[5] == 33
    buf.free()


def _fd_gone(fd, ident):
    """fd no longer names the file whose (st_dev, st_ino) is ident (closed,
    or its number reused for another file)."""
    try:
        st = os.fstat(fd)
    except OSError:
        return True
    return (st.st_dev, st.st_ino) != ident


def test_attach_without_import_returns_the_fds(tmp_path, pd):
    """attach(import_objects=False) hands over the buffers' fds with the
    raw blobs (Attached.fds): they import by hand, and close() or garbage
    collection of the Attached closes them."""
    import gc
    endpoint = str(tmp_path / "raw.sock")
    buf = pd.alloc_buffer(N, access=ACCESS)
    memoryview(buf)[:4] = b"raw!"
    want = os.fstat(buf.fd)
    with rshare.serve(endpoint):
        with rshare.publish("team/raw", pd.device, pd=pd, buf=buf, endpoint=endpoint):
            with rshare.attach("team/raw", timeout=5, endpoint=endpoint,
                               import_objects=False) as share:
                assert share.bufs == [] and share.pds == []
                assert len(share.fds) == 1
                fd = share.fds[0]
                st = os.fstat(fd)
                ident = (st.st_dev, st.st_ino)
                assert ident == (want.st_dev, want.st_ino)  # the buffer's own memfd
                pd_blob, buf_blob = share.blobs
                apd = share.device.import_pd(pd_blob)
                got = apd.import_buffer(buf_blob, fd)
                assert bytes(memoryview(got)[:4]) == b"raw!"
                memoryview(got)[4] = 33
                got.unimport()
                apd.unimport()
            assert share.fds == [] and _fd_gone(fd, ident)
            share.close()  # again: nothing left to close
            assert memoryview(buf)[4] == 33

            share = rshare.attach("team/raw", timeout=5, endpoint=endpoint,
                                  import_objects=False)
            fd = share.fds[0]
            assert not _fd_gone(fd, ident)
            del share
            gc.collect()
            assert _fd_gone(fd, ident)  # closed with the collected Attached

            # The default still imports and keeps no fd of its own.
            with rshare.attach("team/raw", timeout=5, endpoint=endpoint) as share:
                assert share.fds == [] and share.buf is not None
    buf.free()


def test_device_memory_is_mapped_zero_copy(dev):
    """sim0 maps its device memory (Caps.DM_MAP): numpy sees what dm.write
    wrote, in place; unmap and free wait for the views to go."""
    assert dev.caps & rshare.Caps.DM_MAP
    dm = dev.alloc_dm(4096)
    dm.write(8, b"in place")
    view = np.frombuffer(dm, dtype=np.uint8)
    assert view.size == 4096 and bytes(view[8:16]) == b"in place"
    view[0:4] = list(b"back")
    assert dm.read(0, 4) == b"back"
    assert np.from_dlpack(dm).ctypes.data == view.ctypes.data
    with pytest.raises(BufferError):
        dm.unmap()
    with pytest.raises(BufferError):
        dm.free()
    del view
    dm.unmap()
    dm.free()
