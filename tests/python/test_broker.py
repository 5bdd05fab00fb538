# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Named shares through a broker, from Python, with real processes: each
other side is a fresh interpreter started by subprocess (no fd inherited),
meeting this one only by name, through a broker embedded here and through
the `rshare serve` daemon."""

import os
import select
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import rshare

RSHARE = os.path.join(os.environ.get("RSHARE_BUILD_DIR", "build"), "bin", "rshare")


@pytest.fixture
def daemon(endpoint):
    proc = start_daemon(endpoint)
    yield endpoint
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def start_daemon(endpoint):
    proc = subprocess.Popen([RSHARE, "serve", "--socket", endpoint], stderr=subprocess.PIPE)
    for _ in range(500):
        try:
            rshare.shares(endpoint)
            return proc
        except rshare.Error:
            time.sleep(0.01)
    proc.kill()
    raise AssertionError("the daemon did not come up")


def child(code, *args, **kw):
    """A fresh interpreter running code (argv[1:] = args)."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def finish(proc, timeout=30):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, (out, err)
    return out


# Attaches to argv[2], checks the publisher's word 0 and writes word 1.
ATTACHER = """
    import sys, rshare
    ep, name, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with rshare.attach(name, timeout=timeout, endpoint=ep) as share:
        page = share.var.map()
        assert bytes(page[0:4]) == b"PUBL", bytes(page[0:4])
        page[4:8] = b"ATCH"
        assert share.pd.handle >= 0
        print("attached", share.pd.handle, flush=True)
"""

# Publishes a PD and a VAR as argv[2], writes word 0, waits for stdin to
# close, then checks the attacher's word 1.
PUBLISHER = """
    import sys, rshare
    ep, name, persistent = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    dev = rshare.open("sim0")
    pd, var = dev.alloc_pd(), dev.alloc_var()
    page = var.map()
    page[0:4] = b"PUBL"
    share = rshare.publish(name, dev, pd=pd, var=var, persistent=persistent, endpoint=ep)
    print("ready", flush=True)
    if persistent:
        sys.exit(0)
    sys.stdin.read()
    assert bytes(page[4:8]) == b"ATCH", bytes(page[4:8])
    share.withdraw()
"""


def test_embedded_broker_to_an_unrelated_process(endpoint):
    with rshare.serve(endpoint) as broker:
        assert broker.endpoint == endpoint and broker.running
        with rshare.open("sim0") as dev, dev.alloc_pd() as pd, dev.alloc_var() as var:
            page = var.map()
            page[0:4] = b"PUBL"
            with rshare.publish("py/embedded", dev, pd=pd, var=var, endpoint=endpoint) as share:
                assert share.published
                [entry] = rshare.shares(endpoint)
                assert entry["name"] == "py/embedded" and entry["blobs"] == ["pd", "var"]
                assert entry["owner_pid"] == os.getpid() and entry["persistent"] is False
                out = finish(child(ATTACHER, endpoint, "py/embedded", 0))
                assert out.split() == ["attached", str(pd.handle)]
                assert bytes(page[4:8]) == b"ATCH"
                assert rshare.shares(endpoint)[0]["attaches"] == 1
            assert rshare.shares(endpoint) == []
            page.release()
    assert not broker.running
    assert not os.path.exists(endpoint)


def test_two_unrelated_processes_through_the_daemon(daemon):
    pub = child(PUBLISHER, daemon, "py/daemon", 0)
    assert pub.stdout.readline().strip() == "ready"
    finish(child(ATTACHER, daemon, "py/daemon", 0))
    finish(pub)


def test_attach_waits_for_a_later_publish(daemon):
    att = child(ATTACHER, daemon, "py/late", 20)
    time.sleep(0.3)
    pub = child(PUBLISHER, daemon, "py/late", 0)
    assert pub.stdout.readline().strip() == "ready"
    finish(att)
    finish(pub)


def test_publisher_killed_name_gone_attacher_keeps_working(daemon):
    pub = child(PUBLISHER, daemon, "py/kill", 0)
    assert pub.stdout.readline().strip() == "ready"
    share = rshare.attach("py/kill", endpoint=daemon)
    pub.kill()
    pub.communicate()
    deadline = time.monotonic() + 2
    while any(s["name"] == "py/kill" for s in rshare.shares(daemon)):
        assert time.monotonic() < deadline, "still published after its publisher died"
        time.sleep(0.005)
    with pytest.raises(rshare.NotFound):
        rshare.attach("py/kill", timeout=0, endpoint=daemon)
    page = share.var.map()
    assert bytes(page[0:4]) == b"PUBL"
    page[8:12] = b"mine"
    assert bytes(page[8:12]) == b"mine"
    assert share.device.import_pd(share.blobs[0]).handle == share.pd.handle
    page.release()
    share.close()


def test_persistent_share_outlives_its_publisher(daemon):
    pub = child(PUBLISHER, daemon, "py/keep", 1)
    assert pub.stdout.readline().strip() == "ready"
    finish(pub)
    [entry] = rshare.shares(daemon)
    assert entry["persistent"] is True
    with rshare.attach("py/keep", endpoint=daemon) as share:
        assert bytes(share.var.map()[0:4]) == b"PUBL"
    rshare.withdraw("py/keep", endpoint=daemon)
    with pytest.raises(rshare.NotFound):
        rshare.withdraw("py/keep", endpoint=daemon)


def test_broker_killed_then_restarted(endpoint):
    proc = start_daemon(endpoint)
    waiter = child("""
        import sys, rshare
        try:
            rshare.attach("py/never", timeout=None, endpoint=sys.argv[1])
        except rshare.SystemCallError as e:
            print("E_IO", e.name, flush=True)
    """, endpoint)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    assert finish(waiter).split() == ["E_IO", "RSHARE_E_IO"]
    with pytest.raises(rshare.SystemCallError):
        rshare.shares(endpoint)
    proc = start_daemon(endpoint)  # the stale socket is replaced
    try:
        pub = child(PUBLISHER, endpoint, "py/again", 0)
        assert pub.stdout.readline().strip() == "ready"
        finish(child(ATTACHER, endpoint, "py/again", 0))
        finish(pub)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another uid")
def test_other_uid_refused_allowed_one_served(endpoint):
    with rshare.serve(endpoint), rshare.open("sim0") as dev, dev.alloc_pd() as pd:
        closed = rshare.publish("py/closed", dev, pd=pd, endpoint=endpoint)
        opened = rshare.publish("py/open", dev, pd=pd, allow_uids=[65534], endpoint=endpoint)
        by_group = rshare.publish("py/group", dev, pd=pd, allow_gids=[4242], endpoint=endpoint)
        code = """
            import sys, rshare
            ep = sys.argv[1]
            for name in ("py/closed", "py/open", "py/group"):
                try:
                    with rshare.attach(name, timeout=0, endpoint=ep) as s:
                        print(name, "served", s.pd.handle)
                except rshare.PermissionDenied:
                    print(name, "refused")
            try:
                rshare.withdraw("py/closed", endpoint=ep)
            except rshare.PermissionDenied:
                print("withdraw refused")
        """
        out = finish(child(code, endpoint, user=65534, group=65534, extra_groups=[4242]))
        assert out.splitlines() == ["py/closed refused", f"py/open served {pd.handle}",
                                    f"py/group served {pd.handle}", "withdraw refused"]
        out = finish(child(code, endpoint, user=4243, group=4243, extra_groups=[]))
        assert out.splitlines()[:3] == ["py/closed refused", "py/open refused",
                                        "py/group refused"]
        for s in (closed, opened, by_group):
            s.withdraw()


SIGINT_ATTACH = """
    import sys, time, rshare
    print("waiting", flush=True)
    start = time.monotonic()
    try:
        rshare.attach("py/never", timeout=None, endpoint=sys.argv[1])
    except KeyboardInterrupt:
        print("KeyboardInterrupt after %.2f s" % (time.monotonic() - start), flush=True)
        sys.exit(0)
    sys.exit("attach returned")
"""


def test_ctrl_c_interrupts_a_waiting_attach(endpoint):
    with rshare.serve(endpoint):
        proc = child(SIGINT_ATTACH, endpoint)
        try:
            assert proc.stdout.readline().strip() == "waiting"
            time.sleep(0.3)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
            elapsed = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        assert out.startswith("KeyboardInterrupt after"), (out, err)
        assert elapsed < 2, elapsed


def test_timeout_is_honoured(endpoint):
    with rshare.serve(endpoint):
        start = time.monotonic()
        with pytest.raises(rshare.NotFound):
            rshare.attach("py/absent", timeout=0.3, endpoint=endpoint)
        assert 0.25 < time.monotonic() - start < 5
        with pytest.raises(ValueError):
            rshare.attach("py/absent", timeout=-1, endpoint=endpoint)


def test_errors_and_raw_blobs(endpoint):
    with rshare.serve(endpoint) as broker:
        assert rshare.serve(endpoint) is broker  # this process's own: given back
        with rshare.open("sim0") as dev, dev.alloc_pd() as pd:
            with pytest.raises(TypeError):
                rshare.publish("py/x", "not a device", endpoint=endpoint)
            for bad in ("", "a b", "/a", "a//b", "x" * 256):
                with pytest.raises(rshare.InvalidArgument):
                    rshare.publish(bad, dev, pd=pd, endpoint=endpoint)
            with pytest.raises(ValueError):
                rshare.publish("py/x", dev, allow_uids=range(65), endpoint=endpoint)
            with rshare.publish("py/raw", dev, blobs=[pd.export()], endpoint=endpoint):
                with rshare.attach("py/raw", endpoint=endpoint, import_objects=False) as s:
                    assert s.blobs == [pd.export()] and s.pds == [] and s.vars == []
                    with pytest.raises(LookupError, match="carries no PD"):
                        s.pd.handle
                    with pytest.raises(LookupError, match="carries no VAR"):
                        s.var.map()
                    assert rshare.kind(s.blobs[0]) == "pd"
            with rshare.publish("py/text", dev, blobs=[], endpoint=endpoint) as sh:
                assert sh.payload == b""
        assert broker.endpoint == endpoint


def test_default_endpoint_follows_the_environment(monkeypatch):
    monkeypatch.setenv("RSHARE_BROKER", "/some/where.sock")
    assert rshare._broker.default_endpoint() == "/some/where.sock"
    monkeypatch.delenv("RSHARE_BROKER")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert rshare._broker.default_endpoint() == "/run/user/1000/rshare/broker.sock"


def test_mr_and_dm_travel_with_their_pd(endpoint):
    with rshare.serve(endpoint), rshare.open("sim0") as dev, dev.alloc_pd() as pd:
        buf = bytearray(4096)
        with pd.reg_mr(buf) as mr, dev.alloc_dm(4096) as dm:
            dm.write(0, b"dm bytes")
            with rshare.publish("py/mem", dev, pd=pd, mr=mr, dm=dm, endpoint=endpoint):
                assert rshare.shares(endpoint)[0]["blobs"] == ["pd", "mr", "dm"]
                code = """
                    import sys, rshare
                    with rshare.attach("py/mem", endpoint=sys.argv[1]) as s:
                        print(s.pd.handle, len(s.mrs), s.mrs[0].attrs().rkey, s.dms[0].read(0, 8))
                """
                out = finish(child(code, endpoint)).split()
                assert out == [str(pd.handle), "1", str(mr.attrs().rkey), "b'dm", "bytes'"]


def test_shares_retries_a_growing_list_a_few_times_only(endpoint):
    """A hostile broker whose list grows by more than the retry margin at
    every request: shares() gives up after a few tries (issue 18, item 6;
    it looped in C for as long as the broker went on)."""
    import socket
    import struct
    import threading

    served = []
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(endpoint)
    listener.listen(8)
    listener.settimeout(5)

    def serve():
        while len(served) < 50:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(64)
                served.append(1)
                body = b"[" + b"x" * (16384 * (len(served) + 1)) + b"]"
                for off in range(0, len(body), 32768):
                    chunk = body[off:off + 32768]
                    more = 1 if off + 32768 < len(body) else 0
                    conn.send(b"RSBK" + struct.pack("<HBBIi", 1, 0x84, more, len(chunk), 0)
                              + chunk)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with pytest.raises(rshare.BufferTooSmall):
        rshare.shares(endpoint)
    listener.close()
    thread.join(10)
    assert len(served) <= 8


def _fd_count():
    return len(os.listdir("/proc/self/fd"))


def _out_of_memory_sweep(start, call, end, undo):
    """call(start()) with the k-th Python allocation failing and every one
    after it, for k = 0, 1, ... until it succeeds, end(started) after
    each: each MemoryError must leave nothing behind (undo(result)
    releases a success). Returns the number of failed calls."""
    _testcapi = pytest.importorskip("_testcapi")
    failed = 0
    for k in range(400):
        before = _fd_count()
        started = start()
        _testcapi.set_nomemory(k)
        try:
            got = call(started)
        except MemoryError:
            got = None
        finally:
            _testcapi.remove_mem_hooks()
        end(started)
        if got is not None:
            undo(got)
            assert _fd_count() == before
            return failed
        failed += 1
        assert _fd_count() == before, f"allocation {k} failing left fds open"
    raise AssertionError("never succeeded")


def test_attach_out_of_memory_closes_the_buffer_fds(daemon):
    """The extension's attach (blocking and event-loop) of a share with a
    buffer, with Python's allocator failing at each of its steps in turn:
    the device and the buffer's memfd are closed whichever failed (the
    fd list, the Device, the result tuple), and no reference is dropped
    twice; an operation started but not returned is cancelled. (The
    broker is another process: its ends of the connections are not
    counted here.)"""
    _c = rshare._rshare
    endpoint = daemon

    def undo(got):
        dev, _, fds = got
        for fd in fds:
            os.close(fd)
        dev.close()

    def start_op():
        op = _c.attach_start(endpoint, "oom/buffer")
        select.select([_c.attach_fd(op)], [], [], 5)
        return op

    def cancel_op(op):
        try:
            _c.attach_cancel(op)
        except rshare.StaleHandleError:
            pass  # finished (or failed for good): over in C

    def nothing(_):
        pass

    with rshare.open("sim0") as dev, dev.alloc_pd() as pd:
        buf = pd.alloc_buffer(4096)
        with rshare.publish("oom/buffer", dev, pd=pd, buf=buf, endpoint=endpoint):
            undo(_c.broker_attach(endpoint, "oom/buffer", 0))  # the kept connection made
            assert _out_of_memory_sweep(
                lambda: None, lambda _: _c.broker_attach(endpoint, "oom/buffer", 0),
                nothing, undo) > 0
            assert _out_of_memory_sweep(start_op, _c.attach_finish, cancel_op, undo) > 0
            assert _out_of_memory_sweep(lambda: None, lambda _: _c.attach_start(
                endpoint, "oom/buffer"), nothing, cancel_op) > 0
        buf.free()


class _Interrupted(BaseException):
    """What a signal handler might raise at any line (as KeyboardInterrupt)."""


def test_attached_failing_midway_closes_its_fds_once(monkeypatch):
    """An Attached (import_objects=False) whose making is interrupted after
    it took the share's fds: they are closed once, not again by its
    finalizer when the half-made object goes, which would close whatever
    file reused the number meanwhile."""
    import gc

    def interrupted(payload):
        raise _Interrupted()

    with rshare.open("sim0") as dev:
        fds = [os.memfd_create("received")]
        number = fds[0]
        monkeypatch.setattr(rshare._broker, "split_blobs", interrupted)
        with pytest.raises(_Interrupted) as caught:
            rshare._broker._attached("x", dev, b"", fds, False)
        monkeypatch.undo()
        reused = os.memfd_create("reused")  # the lowest free number: the closed one's
        try:
            assert reused == number
            del caught  # the traceback held the half-made Attached
            gc.collect()
            os.fstat(reused)  # still open: nobody closed it behind our back
        finally:
            os.close(reused)
