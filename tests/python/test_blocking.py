# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""rshare.recv/send wait like the socket module's calls: without the
interpreter lock, interruptible by Ctrl-C, honouring the socket's timeout
and non-blocking mode (issue 14)."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import rshare


def test_recv_honours_the_socket_timeout():
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(1)
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            rshare.recv(b)
        assert 0.9 <= time.monotonic() - start < 10
        with pytest.raises(TimeoutError):  # what the socket module says
            b.recv(1)


def test_recv_in_non_blocking_mode_raises_blocking_io_error():
    a, b = socket.socketpair()
    with a, b:
        b.setblocking(False)
        with pytest.raises(BlockingIOError):
            rshare.recv(b)
        with pytest.raises(BlockingIOError):
            b.recv(1)
        os.set_blocking(a.fileno(), False)  # a raw fd follows its O_NONBLOCK flag
        with pytest.raises(BlockingIOError):
            rshare.recv(a.fileno())


def channel_header(length):
    """The channel's 16-byte header (capi/src/core/channel.c): "RSHC", u16
    version 1, u16 flags 0, u32 payload length, u32 0, little-endian."""
    return b"RSHC" + (1).to_bytes(2, "little") + bytes(2) + length.to_bytes(4, "little") \
        + bytes(4)


@pytest.mark.parametrize("mode", ["timeout", "non-blocking"])
def test_recv_waits_for_a_message_arriving_in_pieces(dev, mode):
    """On a socket with a timeout (non-blocking underneath), a message still
    arriving is waited for whole, never half read and lost."""
    a, b = socket.socketpair()
    with a, b:
        payload = os.urandom(rshare.PAYLOAD_MAX)
        socket.send_fds(a, [channel_header(len(payload)) + payload[:1000]], [dev.fd])
        if mode == "non-blocking":
            b.setblocking(False)
            with pytest.raises(BlockingIOError):
                rshare.recv(b)  # nothing consumed
            a.sendall(payload[1000:])
            got, data = rshare.recv(b)
        else:
            b.settimeout(0.3)
            with pytest.raises(TimeoutError):
                rshare.recv(b)  # nothing consumed either
            b.settimeout(20)
            rest = threading.Timer(0.3, a.sendall, (payload[1000:],))
            rest.start()
            got, data = rshare.recv(b)
            rest.join()
        with got:
            assert data == payload and got.guid == dev.guid


def test_send_recv_over_a_multiprocessing_connection(dev):
    """Anything with fileno() works: a Pipe() end is an AF_UNIX socket."""
    import multiprocessing
    left, right = multiprocessing.Pipe()
    with left, right:
        rshare.send(left, dev, b"via pipe")
        got, payload = rshare.recv(right)
        with got:
            assert payload == b"via pipe" and got.guid == dev.guid


def test_recv_waits_without_the_interpreter_lock(dev):
    """A message sent by another Python thread while recv waits arrives:
    the waiting call let the thread run."""
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(20)

        def later():
            time.sleep(0.2)
            rshare.send(a, dev, b"late")

        sender = threading.Thread(target=later)
        sender.start()
        got, payload = rshare.recv(b)
        sender.join()
        with got:
            assert payload == b"late" and got.guid == dev.guid


def test_send_honours_timeout_and_non_blocking_mode(dev):
    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        with pytest.raises(BlockingIOError):
            while True:  # fill the socket buffer
                a.send(bytes(65536))
        with pytest.raises(BlockingIOError):
            rshare.send(a, dev, b"x")
        a.settimeout(0.3)
        with pytest.raises(TimeoutError):
            rshare.send(a, dev, b"x")


SIGINT_CHILD = textwrap.dedent("""
    import socket, sys, time
    import rshare
    a, b = socket.socketpair()
    try:
        start = time.monotonic()
        print("waiting", flush=True)
        rshare.recv(b)
    except KeyboardInterrupt:
        # CLOCK_MONOTONIC is system-wide: the parent compares with its own.
        print("KeyboardInterrupt", start, time.monotonic(), flush=True)
        sys.exit(0)
    sys.exit("recv returned")
""")


def test_sigint_interrupts_recv_promptly():
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.5)  # well inside the blocking call
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    word, start, interrupted = out.split()
    assert word == "KeyboardInterrupt", (out, err)
    assert sent - float(start) >= 0.4  # it was waiting in recv when the signal came
    assert float(interrupted) - sent < 1.0  # and stopped at once, not after a timeout
