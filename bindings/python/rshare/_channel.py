"""Channel: a device context plus a payload over a connected AF_UNIX socket.

One message carries the device's command fd (SCM_RIGHTS) and up to 64 KiB
of payload, typically the export blobs of the objects being shared.
"""

from __future__ import annotations

import socket
from typing import Tuple, Union

from . import _rshare as _c
from ._device import Device

__all__ = ["send", "recv"]

SocketLike = Union[socket.socket, int]


def _fileno(sock: SocketLike) -> int:
    if isinstance(sock, int):
        return sock
    try:
        return sock.fileno()
    except AttributeError:
        raise TypeError(f"expected a socket or an fd, not {type(sock).__name__}") from None


def send(sock: SocketLike, dev: Device, payload: bytes = b"") -> None:
    """Send ``dev``'s context and ``payload`` (at most 64 KiB) as one message
    over ``sock``, a connected AF_UNIX stream or seqpacket socket (or fd).
    Blocks without holding the interpreter lock."""
    if not isinstance(dev, Device):
        raise TypeError(f"send() expects a Device, not {type(dev).__name__}")
    _c.channel_send(_fileno(sock), dev._h, payload)


def recv(sock: SocketLike) -> Tuple[Device, bytes]:
    """Receive one message sent by send(): a new Device importing the sent
    context, and the payload bytes. Blocks (without holding the interpreter
    lock) until a message comes; SystemCallError if the peer closed."""
    handle, payload = _c.channel_recv(_fileno(sock))
    return Device._adopt(handle), payload
