# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Channel: a device context plus a payload over a connected AF_UNIX socket.

One message carries the device's command fd (SCM_RIGHTS) and up to 64 KiB
of payload, typically the export blobs of the objects being shared, and
(since 1.2) up to 8 more fds: a shared Buffer's memory travels that way.
``send(sock, dev, pd, buf)`` sends objects (their blobs, and each buffer's
fd); ``recv_objects(sock)`` imports them on the other side, as the broker's
attach does.

send() and recv() behave like the socket module's calls: they wait without
holding the interpreter lock, Ctrl-C interrupts them (KeyboardInterrupt),
a socket timeout (``sock.settimeout(1)``) raises TimeoutError and a
non-blocking socket (``sock.setblocking(False)``, or a raw fd in O_NONBLOCK
mode) raises BlockingIOError instead of waiting.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, Union

from . import _rshare as _c
from ._device import Device
from ._blob import import_all, split
from ._errors import BlobCorrupt
from ._objects import DM, MR, PD, Buffer, Var

__all__ = ["send", "recv", "recv_fds", "recv_objects"]


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


def _objects_payload(items: Sequence[Any]) -> Tuple[bytes, List[int]]:
    """The blobs of items (a Buffer's PD first unless sent too) and the
    buffers' memory fds, in order."""
    blobs: List[bytes] = []
    fds: List[int] = []
    sent = {id(o) for o in items}
    for obj in items:
        if not isinstance(obj, (PD, Var, MR, DM, Buffer)):
            raise TypeError(f"send() sends bytes or shared objects, not {type(obj).__name__}")
        if isinstance(obj, (MR, Buffer)) and id(obj.pd) not in sent:
            blobs.append(obj.pd.export())  # the receiver imports into it
            sent.add(id(obj.pd))
        blobs.append(obj.export())
        if isinstance(obj, Buffer):
            fds.append(obj.fd)
    return b"".join(blobs), fds


def send(sock: SocketLike, dev: Device, *items: Any, fds: Sequence[int] = ()) -> None:
    """Send ``dev``'s context as one message over ``sock``, a connected
    AF_UNIX stream or seqpacket socket (or fd), with either one payload
    (bytes-like, at most 64 KiB; ``fds``: up to 8 more fds to pass) or
    shared objects: ``send(sock, dev, pd, buf)`` sends their blobs and each
    Buffer's memory fd (an MR's or Buffer's PD is added when not given), to
    be imported with recv_objects()."""
    if not isinstance(dev, Device):
        raise TypeError(f"send() argument 'dev' must be a Device, not {type(dev).__name__}")
    if len(items) == 1 and not isinstance(items[0], (PD, Var, MR, DM, Buffer)):
        payload, extra = items[0], list(fds)
    elif fds:
        raise TypeError("send(): fds go with a bytes payload; objects bring their own")
    else:
        payload, extra = _objects_payload(items)
    fd, timeout = _fd_and_timeout(sock, "send")
    if extra:
        _c.channel_send_wait(fd, dev, payload, timeout, extra)
    else:
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


def recv_fds(sock: SocketLike) -> Tuple[Device, bytes, List[int]]:
    """recv() for a message that may carry extra fds: (Device, payload,
    fds); the fds are the caller's to close."""
    fd, timeout = _fd_and_timeout(sock, "recv_fds")
    dev: Device
    payload: bytes
    fds: List[int]
    dev, payload, fds = _c.channel_recv_wait(fd, timeout, True)
    return dev, payload, fds


def recv_objects(sock: SocketLike) -> Tuple[Device, Dict[str, List[Any]]]:
    """Receive a message sent by ``send(sock, dev, *objects)`` and import
    everything it carries: (Device, {kind name: [objects]}), e.g.
    ``dev, objs = recv_objects(sock); buf = objs["buf"][0]``. Buffers map
    the memory fd that came with them (the received fds are closed here in
    every case); on failure what was imported is released again."""
    dev, payload, fds = recv_fds(sock)
    try:
        blobs = split(payload)
        if blobs is None:
            raise BlobCorrupt("the payload is not a sequence of blobs",
                              _c.RSHARE_E_BLOB_CORRUPT)
        objects = import_all(dev, blobs, list(fds))
    except BaseException:
        dev.close()
        raise
    finally:
        for extra in fds:
            os.close(extra)
    return dev, objects
