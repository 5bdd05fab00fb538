# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Channel: a device context plus a payload over a connected AF_UNIX socket.

One message carries the device's command fd (SCM_RIGHTS) and up to 64 KiB
of payload, typically the export blobs of the objects being shared, and
(since 1.2) up to 8 more fds: a shared Buffer's memory travels that way.
``send(sock, dev, pd, buf)`` sends objects (their blobs, and each buffer's
fd); ``recv_objects(sock)`` imports them on the other side.

send() and recv() behave like the socket module's calls: they wait without
holding the interpreter lock, Ctrl-C interrupts them (KeyboardInterrupt),
a socket timeout (``sock.settimeout(1)``) raises TimeoutError and a
non-blocking socket (``sock.setblocking(False)``, or a raw fd in O_NONBLOCK
mode) raises BlockingIOError instead of waiting.
"""

from __future__ import annotations

import os
import socket
from typing import Any, List, Optional, Protocol, Sequence, Tuple, Union

from . import _rshare as _c
from ._device import Device
from ._errors import BlobCorrupt, InvalidArgument
from ._objects import DM, MR, PD, Buffer, Var

__all__ = ["send", "recv", "recv_fds", "recv_objects"]

Shared = Union[PD, Var, MR, DM, Buffer]

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


def _split_blobs(payload: bytes) -> List[bytes]:
    """The blobs a payload of concatenated blobs holds (each says its length)."""
    blobs, at = [], 0
    while at < len(payload):
        size = int.from_bytes(payload[at + 8:at + 10], "little") if at + 10 <= len(payload) else 0
        if size < 10 or at + size > len(payload):
            raise BlobCorrupt(f"payload is not a sequence of blobs (at byte {at})",
                              _c.RSHARE_E_BLOB_CORRUPT)
        blobs.append(payload[at:at + size])
        at += size
    return blobs


def _import_all(dev: Device, payload: bytes, fds: List[int], objects: List[Shared]) -> None:
    """Import each blob of payload into objects (in order, so a failure
    leaves there what needs releasing)."""
    pds: List[PD] = []
    for blob in _split_blobs(payload):
        kind = _c.blob_kind(blob)
        if kind == _c.RSHARE_KIND_PD:
            new_pd = dev.import_pd(blob)
            pds.append(new_pd)
            obj: Shared = new_pd
        elif kind == _c.RSHARE_KIND_VAR:
            obj = dev.import_var(blob)
        elif kind == _c.RSHARE_KIND_DM:
            obj = dev.import_dm(blob)
        else:  # an MR or a buffer: into the PD it names
            pd_handle = _c.blob_field(blob, _c.RSHARE_FIELD_PD_HANDLE)
            pd = next((p for p in reversed(pds) if p.handle == pd_handle), None)
            if pd is None:
                raise InvalidArgument(f"blob of kind {kind} names PD {pd_handle}, which the "
                                      "message does not carry", _c.RSHARE_E_INVAL)
            if kind == _c.RSHARE_KIND_BUF:
                if not fds:
                    raise InvalidArgument("a buffer blob without its memory fd",
                                          _c.RSHARE_E_INVAL)
                obj = pd.import_buffer(blob, fds.pop(0))
            else:
                obj = pd.import_mr(blob)
        objects.append(obj)


def recv_objects(sock: SocketLike) -> Tuple[Device, List[Shared]]:
    """Receive a message sent by ``send(sock, dev, *objects)`` and import
    everything it carries: (Device, [objects in the order sent, PDs
    included]). Buffers map the memory fd that came with them (the
    received fds are closed here in every case); on failure what was
    imported is released again."""
    dev, payload, fds = recv_fds(sock)
    objects: List[Shared] = []
    try:
        _import_all(dev, payload, list(fds), objects)
    except BaseException:
        for obj in reversed(objects):
            obj.unimport()
        dev.close()
        raise
    finally:
        for extra in fds:
            os.close(extra)
    return dev, objects
