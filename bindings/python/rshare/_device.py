# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Device: an open or imported RDMA device context (or the simulated sim0).

A Device pickles only through multiprocessing, which passes its command fd
to the child (DupFd: pass_fds for spawn, SCM_RIGHTS for forkserver and for
arguments sent to running Pool workers); the child imports the fd into its
own Device. Plain pickle refuses, since an fd number means nothing in
another process.
"""

from __future__ import annotations

import enum
import os
import re
from multiprocessing import reduction as _mp_reduction
from typing import TYPE_CHECKING, Any, List, NamedTuple, NoReturn, Optional, SupportsIndex, Tuple, Union

from . import _errors
from . import _rshare as _c
from ._blob import provider_name
from ._errors import Error
from ._objects import DM, PD, Var

__all__ = ["Caps", "Device", "DeviceInfo", "devices", "open"]


class Caps(enum.IntFlag):
    """What a device can do (Device.caps)."""
    PD = _c.RSHARE_CAP_PD
    VAR = _c.RSHARE_CAP_VAR
    MR = _c.RSHARE_CAP_MR
    DM = _c.RSHARE_CAP_DM
    NATIVE = _c.RSHARE_CAP_NATIVE
    LEDGER = _c.RSHARE_CAP_LEDGER
    BUF = _c.RSHARE_CAP_BUF
    DM_MAP = _c.RSHARE_CAP_DM_MAP


Blob = Union[bytes, bytearray, memoryview, str]

_FD_IN_MESSAGE = re.compile(r"\bfd -?\d+")


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
        result.append(DeviceInfo(name, guid, provider_name(provider)))
    return result


class Device(_c.Context):
    """A device context. Use as a context manager to close it on exit.

    ``close()`` raises Busy while PDs or VARs made or imported through it
    are live in this process; objects keep their Device alive, so the
    garbage collector closes it only after them. ``close()``,
    ``import_pd()``, ``import_var()``, ``closed`` and the context manager
    are the C base type's (rshare._rshare.Context). In a child made by
    fork(), closing an inherited Device first releases, locally, the objects
    the child inherited on it (they live on for the parent).
    """

    __slots__ = ()

    @classmethod
    def open(cls, name: Optional[str] = None) -> "Device":
        """Open a new context on device ``name``; None or "" opens the first
        hardware device, or sim0 when there is none. Opening "sim0" creates a
        new simulated object table, shared only through this context's fd."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f"open() argument 'name' must be str or None, "
                            f"not {type(name).__name__}")
        return _adopt_device(_c.device_open(name))

    @classmethod
    def from_fd(cls, fd: int) -> "Device":
        """Import a context shared by another process through its command fd
        (received by pass_fds, SCM_RIGHTS or inheritance). The fd is
        duplicated: the caller still owns and eventually closes ``fd``."""
        if not isinstance(fd, int) or isinstance(fd, bool):
            raise TypeError(f"from_fd() argument 'fd' must be int, not {type(fd).__name__}")
        try:
            return _adopt_device(_c.device_import(fd))
        except Error as exc:
            # The C library names the caller's fd itself since 1.1; this
            # rewrite (a no-op now) stays for libraries older than that.
            raise type(exc)(_FD_IN_MESSAGE.sub(f"fd {fd}", str(exc)), exc.code,
                            exc.errno) from None

    # -- attributes --------------------------------------------------------
    @property
    def fd(self) -> int:
        """The command fd to share with other processes (borrowed: owned by
        this Device and closed with it)."""
        return _c.device_fd(self)

    @property
    def name(self) -> str:
        """The device name, e.g. "sim0"."""
        return _c.device_name(self)

    @property
    def guid(self) -> int:
        """The node GUID."""
        return _c.device_guid(self)

    @property
    def provider(self) -> str:
        """"hw" for a real RDMA device, "sim" for the simulated sim0."""
        return provider_name(_c.device_provider(self))

    @property
    def caps(self) -> Caps:
        """What this device and the loaded rdma-core can do (a Caps flag set),
        so a program can ask instead of catching Unsupported."""
        return Caps(_c.device_caps(self))

    def native_address(self) -> int:
        """The address of the native struct ibv_context, as an int (borrowed:
        valid until the device is closed). Raises Unsupported on sim0."""
        return int(_c.device_native(self))

    # -- objects -----------------------------------------------------------
    def alloc_pd(self) -> PD:
        """Allocate a protection domain on this device."""
        pd: PD = _c._wrap(_c.RSHARE_KIND_PD, self, _c.pd_alloc(self), False)
        return pd

    def alloc_var(self, flags: int = 0) -> Var:
        """Allocate a VAR; flags is 0 or rshare.VAR_FLAG_TLP."""
        if not isinstance(flags, int):
            raise TypeError(f"alloc_var() argument 'flags' must be int, "
                            f"not {type(flags).__name__}")
        if not 0 <= flags <= 0xFFFFFFFF:
            raise _errors.InvalidArgument(f"alloc_var: flags {flags:#x} out of range",
                                          _c.RSHARE_E_INVAL)
        var: Var = _c._wrap(_c.RSHARE_KIND_VAR, self, _c.var_alloc(self, flags), False)
        return var

    def alloc_dm(self, length: int) -> DM:
        """Allocate ``length`` bytes of device memory."""
        if not isinstance(length, int) or isinstance(length, bool):
            raise TypeError(f"alloc_dm() argument 'length' must be int, "
                            f"not {type(length).__name__}")
        if not 0 <= length < 1 << 64:
            raise _errors.InvalidArgument(f"alloc_dm: length {length} out of range",
                                          _c.RSHARE_E_INVAL)
        dm: DM = _c._wrap(_c.RSHARE_KIND_DM, self, _c.dm_alloc(self, length), False)
        return dm

    def import_dm(self, blob: Blob) -> DM:
        """Import the device memory described by ``blob`` (bytes, or its text form)."""
        dm: DM = self._import(_c.RSHARE_KIND_DM, blob)
        return dm

    if TYPE_CHECKING:  # implemented by the C base type (rshare._rshare.Context)
        def import_pd(self, blob: Blob) -> PD:
            """Import the PD described by ``blob`` (bytes, or its text form)."""

        def import_var(self, blob: Blob) -> Var:
            """Import the VAR described by ``blob`` (bytes, or its text form)."""

    # -- lifetime ----------------------------------------------------------
    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError("a Device can only be sent by multiprocessing (which passes its fd) "
                        "or by rshare.send(); plain pickling would lose the fd")

    def _repr_name(self) -> str:
        try:
            return _c.device_name(self)
        except Error:
            return "a closed device"

    def __repr__(self) -> str:
        if self.closed:
            return "<rshare.Device closed>"
        try:
            return (f"<rshare.Device {_c.device_name(self)} fd={_c.device_fd(self)} "
                    f"provider={self.provider} guid={_c.device_guid(self):#018x}>")
        except Error as exc:
            return f"<rshare.Device stale ({exc.name})>"


def _adopt_device(handle: int) -> Device:
    dev: Device = _c._wrap(_c.KIND_DEVICE, None, handle, False)
    return dev


_c._register(_c.KIND_DEVICE, Device)


def open(name: Optional[str] = None) -> Device:  # noqa: A001 - the issue's API name
    """Open a device context: ``rshare.open()`` is ``Device.open()``."""
    return Device.open(name)


# -- multiprocessing -------------------------------------------------------
def _rebuild_device(dupfd: Any) -> Device:
    fd = dupfd.detach()
    try:
        return Device.from_fd(fd)
    finally:
        os.close(fd)


def _reduce_device(dev: Device) -> Tuple[Any, Tuple[Any]]:
    return _rebuild_device, (_mp_reduction.DupFd(dev.fd),)


_mp_reduction.register(Device, _reduce_device)
