# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Channel: a device context plus a payload over a connected AF_UNIX socket.

One message carries the device's command fd (SCM_RIGHTS) and up to 64 KiB
of payload, typically the export blobs of the objects being shared.

send() and recv() behave like the socket module's calls: they wait without
holding the interpreter lock, Ctrl-C interrupts them (KeyboardInterrupt),
a socket timeout (``sock.settimeout(1)``) raises TimeoutError and a
non-blocking socket (``sock.setblocking(False)``, or a raw fd in O_NONBLOCK
mode) raises BlockingIOError instead of waiting.
"""

from __future__ import annotations

import os
import socket
from typing import Optional, Protocol, Tuple, Union

from . import _rshare as _c
from ._device import Device

__all__ = ["send", "recv"]

SocketLike = Union[socket.socket, int, "_HasFileno"]


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


def _fd_and_timeout(sock: SocketLike, call: str) -> Tuple[int, Optional[float]]:
    """The fd to use and how long to wait (None: forever, 0.0: not at all):
    a socket's own timeout, else what the fd's O_NONBLOCK flag says."""
    if isinstance(sock, socket.socket):
        return sock.fileno(), sock.gettimeout()
    if isinstance(sock, bool) or not (isinstance(sock, int) or
                                      callable(getattr(sock, "fileno", None))):
        raise TypeError(f"{call}() argument 'sock' must be a socket or an fd, "
                        f"not {type(sock).__name__}")
    # An int, or anything with fileno() (e.g. a multiprocessing Connection).
    fd = sock if isinstance(sock, int) else sock.fileno()
    return fd, None if os.get_blocking(fd) else 0.0


def send(sock: SocketLike, dev: Device, payload: bytes = b"") -> None:
    """Send ``dev``'s context and ``payload`` (at most 64 KiB) as one message
    over ``sock``, a connected AF_UNIX stream or seqpacket socket (or fd)."""
    if not isinstance(dev, Device):
        raise TypeError(f"send() argument 'dev' must be a Device, not {type(dev).__name__}")
    fd, timeout = _fd_and_timeout(sock, "send")
    _c.channel_send_wait(fd, dev, payload, timeout)


def recv(sock: SocketLike) -> Tuple[Device, bytes]:
    """Receive one message sent by send(): a new Device importing the sent
    context, and the payload bytes. Waits until a message comes (see the
    module's notes on timeouts and Ctrl-C); SystemCallError if the peer
    closed."""
    fd, timeout = _fd_and_timeout(sock, "recv")
    dev: Device
    dev, payload = _c.channel_recv_wait(fd, timeout)
    return dev, payload
