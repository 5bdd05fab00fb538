# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""rshare.aio: receive and attach on the running asyncio loop, without a
thread, cancellable. A cancelled or timed-out attach leaves no fd in the
process and no waiting request at the broker, and the program exits at once
(each such case runs in a fresh interpreter, timed from outside)."""

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import rshare
import rshare.aio

# The prologue of the scripts run in a fresh interpreter: argv[1] is the
# endpoint of the broker this test process serves.
PROLOGUE = '''
import asyncio, os, sys, threading, time
import rshare, rshare.aio
ep = sys.argv[1]
def fds():
    return len(os.listdir("/proc/self/fd"))
'''

# After the script's main(): nothing left, and asyncio.run returned.
EPILOGUE = '''
before = fds()
asyncio.run(main())
print("fds", fds() - before)
print("waiting", len(rshare.waiting(ep)))
print("threads", threading.active_count())
'''


def run_script(body, endpoint, limit=10):
    """Run PROLOGUE + body + EPILOGUE; its output lines and wall time."""
    code = PROLOGUE + textwrap.dedent(body) + EPILOGUE
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code, endpoint], capture_output=True,
                          text=True, timeout=limit)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split("\n"), took


def assert_left_nothing(lines):
    assert "fds 0" in lines and "waiting 0" in lines and "threads 1" in lines, lines


def test_wait_for_times_out_and_the_program_exits_at_once(endpoint):
    with rshare.serve(endpoint):
        lines, took = run_script('''
            async def main():
                t0 = time.monotonic()
                try:
                    await asyncio.wait_for(rshare.aio.attach("aio/never", timeout=None,
                                                             endpoint=ep), 0.3)
                except TimeoutError:
                    print("TimeoutError", 0.29 <= time.monotonic() - t0 < 2)
            ''', endpoint)
    assert "TimeoutError True" in lines, lines  # after 0.3 s, not much later
    assert_left_nothing(lines)
    assert took < 5, took  # interpreter start-up included: no wait at shutdown


def test_task_cancel(endpoint):
    with rshare.serve(endpoint):
        lines, took = run_script('''
            async def main():
                task = asyncio.ensure_future(rshare.aio.attach("aio/never", endpoint=ep))
                while not rshare.waiting(ep):
                    await asyncio.sleep(0.01)
                print("waiting before cancel", len(rshare.waiting(ep)))
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    print("cancelled")
            ''', endpoint)
    assert "waiting before cancel 1" in lines and "cancelled" in lines, lines
    assert_left_nothing(lines)
    assert took < 5, took


def test_a_finish_failing_in_python_still_cancels_the_operation(endpoint):
    """The extension's attach_finish can fail before it reaches the C
    operation (its 64 KiB payload buffer not allocated: MemoryError), the
    operation still pending: aio.attach cancels it on the way out, leaving
    no fd and no waiting request."""
    with rshare.serve(endpoint):
        lines, _ = run_script('''
            import rshare._rshare as _c
            real_finish = _c.attach_finish

            def out_of_memory(op):
                raise MemoryError("no payload buffer")

            async def main():
                _c.attach_finish = out_of_memory
                try:
                    await rshare.aio.attach("aio/never", endpoint=ep)
                except MemoryError:
                    print("out of memory")
                finally:
                    _c.attach_finish = real_finish
            ''', endpoint)
    assert "out of memory" in lines, lines
    assert_left_nothing(lines)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is Python 3.11+")
def test_asyncio_timeout(endpoint):
    with rshare.serve(endpoint):
        lines, _ = run_script('''
            async def main():
                try:
                    async with asyncio.timeout(0.2):
                        await rshare.aio.attach("aio/never", endpoint=ep)
                except TimeoutError:
                    print("timed out")
            ''', endpoint)
    assert "timed out" in lines, lines
    assert_left_nothing(lines)


def test_own_timeout_is_not_found(endpoint):
    async def main():
        start = time.monotonic()
        with pytest.raises(rshare.NotFound, match="aio/absent"):
            await rshare.aio.attach("aio/absent", timeout=0.2, endpoint=endpoint)
        with pytest.raises(rshare.NotFound):
            await rshare.aio.attach("aio/absent", timeout=0, endpoint=endpoint)
        assert 0.15 < time.monotonic() - start < 3
        assert rshare.waiting(endpoint) == []
        with pytest.raises(ValueError):
            await rshare.aio.attach("aio/absent", timeout=-1, endpoint=endpoint)
        with pytest.raises(rshare.InvalidArgument):
            await rshare.aio.attach("bad//name", endpoint=endpoint)

    with rshare.serve(endpoint):
        asyncio.run(main())
    with pytest.raises(rshare.SystemCallError):  # no broker there now
        asyncio.run(rshare.aio.attach("aio/absent", endpoint=endpoint))


PUBLISHER = '''
import sys, rshare
with rshare.open("sim0") as dev, dev.alloc_pd() as pd, dev.alloc_var() as var:
    var.map()[0:5] = b"fifty"
    with rshare.publish("aio/fifty", dev, pd=pd, var=var, endpoint=sys.argv[1]):
        print("published", pd.handle, flush=True)
        sys.stdin.read()
'''


def test_fifty_concurrent_attaches_complete_when_the_publisher_appears(endpoint):
    async def main():
        tasks = [asyncio.ensure_future(rshare.aio.attach("aio/fifty", endpoint=endpoint))
                 for _ in range(50)]
        deadline = time.monotonic() + 10
        while len(rshare.waiting(endpoint)) < 50 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(rshare.waiting(endpoint)) == 50
        assert not any(t.done() for t in tasks)
        publisher = subprocess.Popen([sys.executable, "-c", PUBLISHER, endpoint],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            shares = await asyncio.wait_for(asyncio.gather(*tasks), 20)
            handle = int(publisher.stdout.readline().split()[1])
            # Published: timeout=0 attaches without waiting.
            shares.append(await rshare.aio.attach("aio/fifty", timeout=0, endpoint=endpoint))
            for share in shares:
                with share:
                    assert share.pd.handle == handle
                    assert bytes(share.var.map()[0:5]) == b"fifty"
        finally:
            publisher.stdin.close()
            assert publisher.wait(timeout=20) == 0
        assert rshare.waiting(endpoint) == []

    with rshare.serve(endpoint):
        asyncio.run(main())


def test_recv_on_the_loop():
    async def main():
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with a, b, rshare.open("sim0") as dev:
            with pytest.raises(ValueError, match="non-blocking"):
                await rshare.aio.recv(a)
            a.setblocking(False)
            loop = asyncio.get_running_loop()
            loop.call_later(0.1, rshare.send, b, dev, b"hello")
            got, payload = await asyncio.wait_for(rshare.aio.recv(a), 5)
            with got:
                assert payload == b"hello" and got.name == dev.name
            # Cancelled while waiting: the reader is gone, nothing consumed.
            task = asyncio.ensure_future(rshare.aio.recv(a))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert loop.remove_reader(a.fileno()) is False
            rshare.send(b, dev, b"next")
            got, payload = await asyncio.wait_for(rshare.aio.recv(a), 5)
            with got:
                assert payload == b"next"

    before = len(os.listdir("/proc/self/fd"))
    asyncio.run(main())
    assert len(os.listdir("/proc/self/fd")) == before


BUFFER_PUBLISHER = '''
import os, sys, rshare
with rshare.open("sim0") as dev, dev.alloc_pd() as pd:
    buf = pd.alloc_buffer(4096)
    memoryview(buf)[:9] = b"published"
    with rshare.publish("aio/buffer", dev, pd=pd, buf=buf, endpoint=sys.argv[1]):
        print("published", os.fstat(buf.fd).st_ino, flush=True)
        sys.stdin.read()
    print("attacher wrote", bytes(memoryview(buf)[9:14]), flush=True)
    buf.free()
'''


def test_attach_a_buffer_share_with_a_timeout(endpoint):
    """aio.attach of a share that carries a buffer (its memfd travels with
    it) waits for it with a timeout and returns it imported, zero-copy with
    numpy, as rshare.attach does; import_objects=False hands over the
    publisher's own memfd; nothing is left open afterwards."""
    np = pytest.importorskip("numpy")

    async def main():
        task = asyncio.ensure_future(rshare.aio.attach("aio/buffer", timeout=10,
                                                       endpoint=endpoint))
        while not rshare.waiting(endpoint):
            await asyncio.sleep(0.01)
        publisher = subprocess.Popen([sys.executable, "-c", BUFFER_PUBLISHER, endpoint],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            ino = int(publisher.stdout.readline().split()[1])
            with await asyncio.wait_for(task, 20) as share:
                got = share.buf
                assert got is not None and got.imported and share.fds == []
                view = np.frombuffer(got, dtype=np.uint8)
                assert view.ctypes.data == got.ptr  # zero-copy: the mapping itself
                assert bytes(view[:9]) == b"published"
                view[9:14] = list(b"aio!!")
                del view
            # Published now; by hand, with a timeout again and without.
            for timeout in (5, None):
                with await rshare.aio.attach("aio/buffer", timeout=timeout, endpoint=endpoint,
                                             import_objects=False) as share:
                    assert len(share.fds) == 1 and os.fstat(share.fds[0]).st_ino == ino
                    pd_blob, buf_blob = share.blobs
                    apd = share.device.import_pd(pd_blob)
                    mine = apd.import_buffer(buf_blob, share.fds[0])
                    assert bytes(memoryview(mine)[:9]) == b"published"
                    mine.unimport()
                    apd.unimport()
        finally:
            publisher.stdin.close()
            out = publisher.stdout.read()
            assert publisher.wait(timeout=20) == 0
        assert "attacher wrote b'aio!!'" in out, out

    with rshare.serve(endpoint):
        before = len(os.listdir("/proc/self/fd"))
        asyncio.run(main())
        assert len(os.listdir("/proc/self/fd")) == before
        assert rshare.waiting(endpoint) == []


def _lying_broker(listener, body_len, nfds):
    """A hostile broker: answer one attach with an OK reply of a body_len
    body carrying nfds fresh memfds (the device's, then a buffer's)."""
    conn, _ = listener.accept()
    with conn:
        conn.recv(512)
        header = (b"RSBK\x01\x00" + bytes([0x82, 0]) + body_len.to_bytes(4, "little")
                  + (0).to_bytes(4, "little"))
        fds = [os.memfd_create("liar") for _ in range(nfds)]
        try:
            socket.send_fds(conn, [header + bytes(body_len)], fds)
        finally:
            for fd in fds:
                os.close(fd)  # in flight: the attacher's are the last references


def test_attach_refuses_an_oversized_share_and_keeps_nothing(tmp_path):
    """A broker's reply one byte past RSHARE_PAYLOAD_MAX, with a device fd
    and a buffer's: aio.attach raises ProtocolError and leaves no fd (its
    operation, the reply's fds) behind, whichever way it fails."""
    import threading

    path = str(tmp_path / "liar.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(1)
    with listener:
        before = len(os.listdir("/proc/self/fd"))
        liar = threading.Thread(target=_lying_broker,
                                args=(listener, rshare.PAYLOAD_MAX + 1, 2))
        liar.start()
        with pytest.raises(rshare.ProtocolError):
            asyncio.run(asyncio.wait_for(rshare.aio.attach("x", endpoint=path), 10))
        liar.join()
        assert len(os.listdir("/proc/self/fd")) == before
