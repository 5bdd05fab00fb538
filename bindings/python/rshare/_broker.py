# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Named shares through a broker: processes that share no ancestry find a
device and its objects by name.

    with rshare.serve():                          # or run `rshare serve`
        with rshare.open() as dev, dev.alloc_pd() as pd, dev.alloc_var() as var:
            with rshare.publish("team/exp1", dev, pd=pd, var=var):
                ...                               # while this block runs

    # in any other process of the same user (or one the share allows):
    with rshare.attach("team/exp1", timeout=10) as share:
        share.var.map()[0:4] = b"ping"            # the objects, imported

The payload of a share is its blobs, concatenated. Every call blocks
without the interpreter lock; attach() waits interruptibly (Ctrl-C) for a
name that is not yet published. Endpoints: None is the default
($RSHARE_BROKER, $XDG_RUNTIME_DIR/rshare/broker.sock, ...; docs/broker.md).
"""

from __future__ import annotations

import json
import os
import warnings
import weakref
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

from . import _rshare as _c
from . import _blob
from ._device import Device
from ._errors import Error, StaleHandleError, _exit_cleanup
from ._objects import PD, Var, MR, DM, Buffer

__all__ = ["Broker", "Share", "Attached", "serve", "publish", "attach", "shares",
           "waiting", "withdraw", "default_endpoint"]

_Objects = Union[None, PD, Var, MR, DM, Buffer, Sequence[Any]]
_O = TypeVar("_O")


def default_endpoint() -> str:
    """The socket path an endpoint of None means for this process."""
    return _c.broker_endpoint(None)


def _path(endpoint: Optional[str]) -> str:
    return default_endpoint() if endpoint is None else endpoint


# What this process serves and publishes, so that running serve() or
# publish() again (a notebook cell run twice) gets its own broker back or
# replaces its own share, instead of Busy.
_brokers: "weakref.WeakValueDictionary[str, Broker]" = weakref.WeakValueDictionary()
_shares: "weakref.WeakValueDictionary[Tuple[str, str], Share]" = weakref.WeakValueDictionary()


class Broker:
    """A broker embedded in this process (a thread); serve() makes one.
    ``stop()`` (or leaving the ``with`` block) withdraws every share it
    holds; attachers keep what they attached."""

    __slots__ = ("_h", "endpoint", "__weakref__")

    def __init__(self, endpoint: Optional[str] = None) -> None:
        self._h: Optional[int] = _c.broker_start(endpoint)
        #: The socket path it listens on.
        self.endpoint: str = _c.broker_endpoint(self._h)
        _brokers[_path(endpoint)] = self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._h is not None:
            _c.broker_stop(self._h)
            self._h = None

    @property
    def running(self) -> bool:
        return self._h is not None

    def __enter__(self) -> "Broker":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        _exit_cleanup(self.stop, exc)

    def __del__(self) -> None:
        if self._h is None:
            return
        try:
            warnings.warn(f"unstopped {self!r}; stop() it or use it in a with block",
                          ResourceWarning, source=self)
            self.stop()
        except Exception:  # interpreter shutdown, a forked child
            pass

    def __repr__(self) -> str:
        return f"<rshare.Broker {self.endpoint} {'running' if self._h else 'stopped'}>"


def serve(endpoint: Optional[str] = None) -> Broker:
    """Start a broker in this process: ``with rshare.serve() as broker:``.
    If this process already runs one on the endpoint (a notebook cell run
    again), that broker is returned. Busy if another process's broker
    serves the endpoint."""
    running = _brokers.get(_path(endpoint))
    if running is not None and running.running:
        return running
    return Broker(endpoint)


def _as_list(objs: _Objects) -> List[Any]:
    if objs is None:
        return []
    if isinstance(objs, (PD, Var, MR, DM, Buffer)):
        return [objs]
    return list(objs)


class Share:
    """A share this process published. It lives while this handle does
    (or, persistent, until withdrawn); ``withdraw()`` or leaving the
    ``with`` block withdraws it."""

    __slots__ = ("_h", "name", "endpoint", "persistent", "payload", "__weakref__")

    def __init__(self, handle: int, name: str, endpoint: Optional[str], persistent: bool,
                 payload: bytes) -> None:
        self._h: Optional[int] = handle
        self.name = name
        self.endpoint = endpoint
        self.persistent = persistent
        self.payload = payload

    def withdraw(self) -> None:
        """Withdraw the share (idempotent; a share already gone is fine)."""
        if self._h is not None:
            _c.broker_withdraw(self._h)  # a failure keeps the handle (e.g. OutOfMemory)
            self._h = None

    @property
    def published(self) -> bool:
        return self._h is not None

    def __enter__(self) -> "Share":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        _exit_cleanup(self.withdraw, exc)

    def __del__(self) -> None:
        # A default share goes with its handle (a ResourceWarning says it
        # was not withdrawn explicitly). A persistent one outlives it: its
        # connection is left to the process's exit.
        if not self.persistent and self._h is not None:
            try:
                warnings.warn(f"unwithdrawn {self!r}; withdraw() it or use it in a with "
                              "block", ResourceWarning, source=self)
                self.withdraw()
            except Exception:
                pass

    def __repr__(self) -> str:
        state = "published" if self._h is not None else "withdrawn"
        return f"<rshare.Share {self.name!r} {state}{' persistent' if self.persistent else ''}>"


def publish(name: str, dev: Device, pd: _Objects = None, var: _Objects = None, *,
            mr: _Objects = None, dm: _Objects = None, buf: _Objects = None,
            blobs: Iterable[bytes] = (), persistent: bool = False,
            allow_uids: Iterable[int] = (), allow_gids: Iterable[int] = (),
            endpoint: Optional[str] = None) -> Share:
    """Publish ``dev`` and the objects (``pd``, ``var``, ``mr``, ``dm``,
    ``buf``: an object or a sequence, exported here; a buffer's memfd goes
    with it; ``blobs`` adds blobs already exported) under ``name``.
    Attach is allowed to this uid, root, ``allow_uids`` and members of
    ``allow_gids``. If this process published ``name`` on the endpoint
    before and still holds that share (a notebook cell run again), the old
    share is withdrawn and replaced. Busy if another process holds the
    name."""
    if not isinstance(dev, Device):
        raise TypeError(f"publish() expects a Device, not {type(dev).__name__}")
    bufs = _as_list(buf)
    parts = [obj.export() for obj in
             _as_list(pd) + _as_list(var) + _as_list(mr) + _as_list(dm) + bufs]
    parts += [bytes(b) for b in blobs]
    payload = b"".join(parts)
    key = (_path(endpoint), name)
    earlier = _shares.get(key)
    if earlier is not None:
        earlier.withdraw()
    handle = _c.broker_publish(endpoint, name, dev, payload, bool(persistent),
                               tuple(allow_uids), tuple(allow_gids), [b.fd for b in bufs])
    share = Share(handle, name, endpoint, bool(persistent), payload)
    _shares[key] = share
    return share


def split_blobs(payload: bytes) -> Optional[List[bytes]]:
    """The blobs a payload is made of, or None if it is not a sequence of
    valid blobs (framed by rshare_blob_size())."""
    return _blob.split(payload)


class Attached:
    """What attach() gives: ``device`` (a new Device), the raw ``payload``,
    its ``blobs`` (None when the payload is not blobs) and, imported on
    ``device``, the objects: ``pds``, ``vars``, ``dms``, ``mrs``, ``bufs`` (each
    imported into the attached PD it is registered on, when the share
    carries that PD) and ``pd`` / ``var`` (the first of each; LookupError when
    the share carries none, so that ``share.pd.handle`` is typed ``int``).
    ``fds``: with ``import_objects=False``, the extra fds the share carried
    (a buffer's memory, in blob order: pass one to ``pd.import_buffer``),
    owned by this object and closed by ``close()`` or when it is collected
    (``os.dup`` one to keep it longer); empty otherwise, the imported
    buffers having mapped their own duplicates. ``close()`` (or leaving the
    ``with`` block) unimports the objects, closes those fds and the
    device."""

    def __init__(self, name: str, device: Device, payload: bytes, import_objects: bool,
                 fds: Sequence[int] = ()) -> None:
        self.name = name
        self.device = device
        self.payload = payload
        # Taken over first, so that nothing below can leak them: a list
        # itself (_attached's), so that if this fails midway its caller's
        # close and the finalizer take each fd from it once.
        self.fds: List[int] = [] if import_objects else (
            fds if isinstance(fds, list) else list(fds))
        self._close_fds = weakref.finalize(self, _close_all, self.fds)
        self.blobs = split_blobs(payload)
        self.pds: List[PD] = []
        self.vars: List[Var] = []
        self.dms: List[DM] = []
        self.mrs: List[MR] = []
        self.bufs: List[Buffer] = []
        if import_objects and self.blobs:
            try:
                objects = _blob.import_all(device, self.blobs, list(fds))
            except BaseException:
                self.close()
                raise
            self.pds = objects.get("pd", [])
            self.vars = objects.get("var", [])
            self.dms = objects.get("dm", [])
            self.mrs = objects.get("mr", [])
            self.bufs = objects.get("buf", [])

    @property
    def pd(self) -> PD:
        """The first PD of the share (LookupError if it carries none)."""
        if not self.pds:
            raise LookupError(f"share {self.name!r} carries no PD")
        return self.pds[0]

    @property
    def var(self) -> Var:
        """The first VAR of the share (LookupError if it carries none)."""
        if not self.vars:
            raise LookupError(f"share {self.name!r} carries no VAR")
        return self.vars[0]

    @property
    def buf(self) -> Optional[Buffer]:
        return self.bufs[0] if self.bufs else None

    def close(self) -> None:
        """Unimport the objects, then close the device (idempotent)."""
        busy: List[Any] = []
        for obj in [*self.bufs, *self.mrs, *self.dms, *self.vars, *self.pds]:
            try:
                obj.unimport()
            except StaleHandleError:
                pass  # already unimported
            except Error:
                busy.append(obj)  # e.g. an MR of the user's on an attached PD

        def still(objs: List[_O]) -> List[_O]:
            return [o for o in objs if any(o is b for b in busy)]

        # What could not be released stays listed, for a later close().
        self.pds, self.vars, self.dms, self.mrs, self.bufs = (
            still(self.pds), still(self.vars), still(self.dms), still(self.mrs),
            still(self.bufs))
        self._close_fds()  # once: later calls do nothing
        if not self.device.closed:
            self.device.close()

    def __enter__(self) -> "Attached":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        _exit_cleanup(self.close, exc)

    def __repr__(self) -> str:
        return (f"<rshare.Attached {self.name!r} {len(self.pds)} PD(s) "
                f"{len(self.vars)} VAR(s) payload={len(self.payload)}B>")


def _close_all(fds: List[int]) -> None:
    """Close every fd of the list and empty it (an Attached's, at close or
    collection)."""
    while fds:
        try:
            os.close(fds.pop())
        except OSError:
            pass  # closed behind our back: nothing left to release


def _attached(name: str, dev: Device, payload: bytes, fds: List[int],
              import_objects: bool) -> Attached:
    """The Attached of a reply. Imported buffers map their own duplicates of
    the fds, which are closed here; with import_objects=False the Attached
    owns them, the list itself (and they are closed, once, if it cannot be
    made: whatever is still in the list)."""
    if not import_objects:
        try:
            return Attached(name, dev, payload, False, fds)
        except BaseException:
            _close_all(fds)
            raise
    try:
        return Attached(name, dev, payload, True, fds)
    finally:
        _close_all(list(fds))


def attach(name: str, timeout: Optional[float] = None, *, endpoint: Optional[str] = None,
           import_objects: bool = True) -> Attached:
    """Attach to the share called ``name``: its device and its objects,
    imported (``import_objects=False``: the raw blobs only, and the fds of
    its buffers in ``Attached.fds``, the Attached's to close). Waits up to
    ``timeout`` seconds (None: no limit, 0: no wait) for the name to be
    published, interruptibly; NotFound if it was not, PermissionDenied if
    the share's policy refuses this process."""
    dev, payload, fds = _c.broker_attach(endpoint, name, timeout)
    return _attached(name, dev, payload, fds, import_objects)


def shares(endpoint: Optional[str] = None) -> List[Dict[str, Any]]:
    """What the broker holds: a list of {name, owner_uid, owner_pid,
    persistent, payload_size, blobs, attaches, created}."""
    result: List[Dict[str, Any]] = json.loads(_c.broker_list(endpoint))
    return result


def waiting(endpoint: Optional[str] = None) -> List[Dict[str, Any]]:
    """The attaches waiting at the broker for a name not yet published: a
    list of {name, uid, pid, waited_ms} (since 1.2)."""
    result: List[Dict[str, Any]] = json.loads(_c.broker_waiting(endpoint))
    return result


def withdraw(name: str, endpoint: Optional[str] = None) -> None:
    """Withdraw a share by name (its owner's uid or root), e.g. a
    persistent one."""
    _c.broker_withdraw_name(endpoint, name)
