# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""rshare for asyncio: receive and attach on the running event loop.

    import asyncio, rshare.aio

    async def main() -> None:
        async with asyncio.timeout(5):                 # or asyncio.wait_for
            share = await rshare.aio.attach("team/exp1")
        with share:
            share.var.map()[0:4] = b"ping"

In a notebook (IPython runs an asyncio loop) the same works with a
top-level ``share = await rshare.aio.attach("team/exp1")``.

Nothing here uses a thread: each call registers a reader for an fd with the
running loop (``loop.add_reader``) and does the non-blocking C step when it
is readable (an attach is ``rshare_broker_attach_startv`` /
``rshare_attach_finishv``, which also take a share's buffers' fds).
Cancelling the awaiting task (``task.cancel()``,
``asyncio.wait_for``, ``asyncio.timeout``) unregisters the reader and
cancels the C operation at once: no fd is left open, no object half
imported, no request left waiting at the broker. The process can exit
right away.

Every call is built on ``_readable(fd, step)``: wait for fd, call step,
until step returns something other than None; calls that need more fds
(buffers) reuse it.
"""

from __future__ import annotations

import asyncio
from typing import Callable, List, Optional, Tuple, TypeVar

from . import _rshare as _c
from ._broker import Attached, _attached
from ._channel import SocketLike, _fd_and_timeout
from ._device import Device
from ._errors import NotFound, StaleHandleError

__all__ = ["recv", "attach"]

_T = TypeVar("_T")


async def _readable(fd: int, step: Callable[[], Optional[_T]]) -> _T:
    """step()'s first result that is not None, calling it each time fd is
    readable (and once at first). Cancellation removes the reader."""
    loop = asyncio.get_running_loop()
    while True:
        result = step()
        if result is not None:
            return result
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)


async def recv(sock: SocketLike) -> Tuple[Device, bytes]:
    """``rshare.recv`` on the running loop: a Device importing the sent
    context and the payload. ``sock`` must be non-blocking
    (``sock.setblocking(False)``, as for ``loop.sock_recv``)."""
    fd, timeout = _fd_and_timeout(sock, "recv")
    if timeout != 0:
        raise ValueError("rshare.aio.recv() needs a non-blocking socket "
                         "(sock.setblocking(False))")
    dev: Device
    dev, payload = await _readable(fd, lambda: _c.channel_recv_nowait(fd))
    return dev, payload


async def attach(name: str, timeout: Optional[float] = None, *,
                 endpoint: Optional[str] = None, import_objects: bool = True) -> Attached:
    """``rshare.attach`` on the running loop: the share's device and its
    objects (an ``Attached``). Waits up to ``timeout`` seconds (None: no
    limit; 0: no wait, one request the broker answers at once) for the name
    to be published, NotFound after that; PermissionDenied if the share's
    policy refuses this process. A share's buffers come as with
    ``rshare.attach``, whatever the timeout: imported (``share.buf``), or
    their fds in ``Attached.fds`` with ``import_objects=False``."""
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be None or >= 0")
    if timeout == 0:
        # No wait for the name: one request the broker answers at once
        # (a local round trip), as rshare.attach(name, timeout=0).
        dev, payload, fds = _c.broker_attach(endpoint, name, 0)
        return _attached(name, dev, payload, fds, import_objects)
    handle = _c.attach_start(endpoint, name)
    op: Optional[int] = handle  # None once the C operation is over
    try:
        fd = _c.attach_fd(handle)

        def step() -> Optional[Attached]:
            nonlocal op
            # A failure leaves op set: it may not have reached the C
            # operation (no memory for the payload), and cancelling one a
            # final failure ended is only StaleHandleError, below.
            got: Optional[Tuple[Device, bytes, List[int]]] = _c.attach_finish(handle)
            if got is None:
                return None
            op = None  # finished: the C operation is over
            # Made here, at once: the fds have an owner even if the result
            # never reaches the caller (a cancel racing the completion).
            return _attached(name, got[0], got[1], got[2], import_objects)

        try:
            share = await asyncio.wait_for(_readable(fd, step), timeout)
        except asyncio.TimeoutError:
            raise NotFound(f"rshare.aio.attach: no share named {name!r} appeared within "
                           f"{timeout} s", NotFound.code) from None
    finally:
        if op is not None:
            try:
                _c.attach_cancel(op)
            except StaleHandleError:
                pass  # over already: finished, or a final failure ended it
    return share
