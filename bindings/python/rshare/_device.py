"""Device: an open or imported RDMA device context (or the simulated sim0).

A Device pickles only through multiprocessing, which passes its command fd
to the child (DupFd: pass_fds for spawn, SCM_RIGHTS for forkserver and for
arguments sent to running Pool workers); the child imports the fd into its
own Device. Plain pickle refuses, since an fd number means nothing in
another process.
"""

from __future__ import annotations

import os
from multiprocessing import reduction as _mp_reduction
from typing import List, NamedTuple, Optional, Union

from . import _rshare as _c
from ._errors import Error
from ._objects import PD, Var
from ._blob import from_text as _from_text

__all__ = ["Device", "DeviceInfo", "devices", "open"]

_PROVIDERS = {_c.RSHARE_PROVIDER_HW: "hw", _c.RSHARE_PROVIDER_SIM: "sim"}

Blob = Union[bytes, bytearray, memoryview, str]


def _provider_name(value: int) -> str:
    return _PROVIDERS.get(value, f"unknown({value})")


class DeviceInfo(NamedTuple):
    """One entry of rshare.devices()."""
    name: str
    guid: int
    provider: str  # "hw" | "sim"


def devices() -> List[DeviceInfo]:
    """Scan the devices: hardware first, then the simulated sim0 (unless
    RSHARE_SIM=0 is set in the environment)."""
    result = []
    for index in range(_c.devices_count()):
        name, guid, provider = _c.devices_get(index)
        result.append(DeviceInfo(name, guid, _provider_name(provider)))
    return result


class Device:
    """A device context. Use as a context manager to close it on exit.

    ``close()`` raises Busy while PDs or VARs made or imported through it
    are live in this process; objects keep their Device alive, so the
    garbage collector closes it only after them.
    """

    __slots__ = ("_h", "_open", "__weakref__")

    _h: int
    _open: bool
    # Bound on the class so the finalizer works during interpreter shutdown.
    _c_close = staticmethod(_c.device_close)

    @classmethod
    def _adopt(cls, handle: int) -> "Device":
        dev = cls.__new__(cls)
        dev._h = handle
        dev._open = True
        return dev

    def __init__(self) -> None:
        raise TypeError("open a Device with rshare.open(), Device.from_fd() or rshare.recv()")

    @classmethod
    def open(cls, name: Optional[str] = None) -> "Device":
        """Open a new context on device ``name``; None or "" opens the first
        hardware device, or sim0 when there is none. Opening "sim0" creates a
        new simulated object table, shared only through this context's fd."""
        return cls._adopt(_c.device_open(name))

    @classmethod
    def from_fd(cls, fd: int) -> "Device":
        """Import a context shared by another process through its command fd
        (received by pass_fds, SCM_RIGHTS or inheritance). The fd is
        duplicated: the caller still owns and eventually closes ``fd``."""
        return cls._adopt(_c.device_import(fd))

    # -- attributes --------------------------------------------------------
    @property
    def fd(self) -> int:
        """The command fd to share with other processes (borrowed: owned by
        this Device and closed with it)."""
        return _c.device_fd(self._h)

    @property
    def name(self) -> str:
        """The device name, e.g. "sim0"."""
        return _c.device_name(self._h)

    @property
    def guid(self) -> int:
        """The node GUID."""
        return _c.device_guid(self._h)

    @property
    def provider(self) -> str:
        """"hw" for a real RDMA device, "sim" for the simulated sim0."""
        return _provider_name(_c.device_provider(self._h))

    @property
    def closed(self) -> bool:
        """True after a successful close()."""
        return not self._open

    # -- objects -----------------------------------------------------------
    def alloc_pd(self) -> PD:
        """Allocate a protection domain on this device."""
        return PD._adopt(self, _c.pd_alloc(self._h), False)

    def import_pd(self, blob: Blob) -> PD:
        """Import the PD described by ``blob`` (bytes, or its text form)."""
        if blob.__class__ is str:
            blob = _from_text(blob)
        return PD._adopt(self, _c.pd_import(self._h, blob), True)

    def alloc_var(self, flags: int = 0) -> Var:
        """Allocate a VAR; flags is 0 or rshare.VAR_FLAG_TLP."""
        return Var._adopt(self, _c.var_alloc(self._h, flags), False)

    def import_var(self, blob: Blob) -> Var:
        """Import the VAR described by ``blob`` (bytes, or its text form)."""
        if blob.__class__ is str:
            blob = _from_text(blob)
        return Var._adopt(self, _c.var_import(self._h, blob), True)

    # -- lifetime ----------------------------------------------------------
    def close(self) -> None:
        """Close the context and its fd (objects live on for other processes
        sharing it). Raises Busy while this process has live PDs/VARs on it
        and StaleHandleError when already closed."""
        _c.device_close(self._h)
        self._open = False

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc_info) -> None:
        if self._open:
            self.close()

    def __del__(self) -> None:
        # Busy (objects still live, e.g. at interpreter exit) is not an
        # error here: the OS closes the fd when the process ends.
        if getattr(self, "_open", False):
            try:
                self._c_close(self._h)
                self._open = False
            except Exception:
                pass

    def __reduce_ex__(self, protocol):
        raise TypeError("a Device can only be sent by multiprocessing (which passes its fd) "
                        "or by rshare.send(); plain pickling would lose the fd")

    def _repr_name(self) -> str:
        try:
            return _c.device_name(self._h)
        except Error:
            return "a closed device"

    def __repr__(self) -> str:
        if not self._open:
            return "<rshare.Device closed>"
        try:
            return (f"<rshare.Device {_c.device_name(self._h)} fd={_c.device_fd(self._h)} "
                    f"provider={self.provider} guid={_c.device_guid(self._h):#018x}>")
        except Error as exc:
            return f"<rshare.Device stale ({exc.name})>"


def open(name: Optional[str] = None) -> Device:  # noqa: A001 - the issue's API name
    """Open a device context: ``rshare.open()`` is ``Device.open()``."""
    return Device.open(name)


# -- multiprocessing -------------------------------------------------------
def _rebuild_device(dupfd) -> Device:
    fd = dupfd.detach()
    try:
        return Device.from_fd(fd)
    finally:
        os.close(fd)


def _reduce_device(dev: Device):
    return _rebuild_device, (_mp_reduction.DupFd(dev.fd),)


_mp_reduction.register(Device, _reduce_device)
