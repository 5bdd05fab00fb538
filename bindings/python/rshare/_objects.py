"""PD and Var: shared objects allocated on or imported into a Device.

Lifetime rules (the same for both classes):
  * an object holds a reference to its Device, so the device outlives it;
  * ``free()`` destroys the object for every process, ``unimport()`` only
    releases this process's handle; a second call raises StaleHandleError
    (the C side generation-checks handles, so a released handle is refused
    forever and can never reach reused memory);
  * the garbage collector and interpreter exit only ever *unimport*: an
    object another process may be using is never destroyed implicitly;
  * as a context manager, an object is freed on exit if it was allocated
    here and unimported if it was imported.
"""

from __future__ import annotations

import json
import mmap
from typing import TYPE_CHECKING, Tuple

from . import _rshare as _c
from ._errors import Error

if TYPE_CHECKING:
    from ._device import Device

__all__ = ["PD", "Var"]

_PICKLE_HINT = ("{0} objects cannot be pickled: send {1}.export() (plain bytes) "
                "and call dev.import_{1}(blob) in the other process")


class _Shared:
    """What PD and Var have in common: a device, a handle token, a state."""

    __slots__ = ("_dev", "_h", "_imported", "_live", "__weakref__")

    _kind = "object"
    _c_unimport = staticmethod(_c.pd_unimport)  # overridden per kind
    _c_free = staticmethod(_c.pd_free)

    _dev: "Device"
    _h: int
    _imported: bool
    _live: bool

    @classmethod
    def _adopt(cls, dev: "Device", handle: int, imported: bool):
        """Wrap a fresh C handle (the constructors' common tail)."""
        obj = cls.__new__(cls)
        obj._dev = dev
        obj._h = handle
        obj._imported = imported
        obj._live = True
        return obj

    def __init__(self) -> None:
        raise TypeError(f"create a {type(self).__name__} with Device.alloc_{self._kind}() "
                        f"or Device.import_{self._kind}()")

    @property
    def device(self) -> "Device":
        """The Device this object was allocated on or imported into."""
        return self._dev

    @property
    def imported(self) -> bool:
        """True if this handle came from import_*(), False if allocated here."""
        return self._imported

    @property
    def live(self) -> bool:
        """False once this process released the handle (free/unimport)."""
        return self._live

    def unimport(self) -> None:
        """Release this process's handle; the object lives on for others.

        Valid on allocated and imported objects alike, and also after another
        process freed the object. A second call raises StaleHandleError.
        """
        self._c_unimport(self._h)
        self._live = False

    def free(self) -> None:
        """Destroy the object for every process and release the handle.

        Raises NotFound if another process already destroyed it (the handle
        stays live: release it with unimport()).
        """
        self._c_free(self._h)
        self._live = False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        if self._live:
            if self._imported:
                self.unimport()
            else:
                self.free()

    def __del__(self) -> None:
        # Local release only, and never an exception out of a finalizer.
        if getattr(self, "_live", False):
            try:
                self._c_unimport(self._h)
            except Exception:
                pass
            self._live = False

    def __reduce_ex__(self, protocol):
        raise TypeError(_PICKLE_HINT.format(type(self).__name__, self._kind))

    def _repr_state(self) -> str:
        how = "imported" if self._imported else "allocated"
        where = self._dev._repr_name()
        if not self._live:
            return f"{how} on {where}, released"
        try:
            return f"handle={self.handle} {how} on {where}"
        except Error as exc:
            return f"{how} on {where}, stale ({exc.name})"

    def __repr__(self) -> str:
        return f"<rshare.{type(self).__name__} {self._repr_state()}>"


class PD(_Shared):
    """A protection domain, allocated here or imported from a blob."""

    __slots__ = ()
    _kind = "pd"
    _c_unimport = staticmethod(_c.pd_unimport)
    _c_free = staticmethod(_c.pd_free)

    @property
    def handle(self) -> int:
        """The PD's kernel handle (meaningful within its object table)."""
        return _c.pd_handle(self._h)

    def export(self) -> bytes:
        """The PD's export blob (bytes, at most 128) for import elsewhere."""
        return _c.pd_export(self._h)


class Var(_Shared):
    """An mlx5 VAR (a doorbell-like page), allocated here or imported.

    ``map()`` returns a writable memoryview of the page through Python's
    mmap module on the device fd; the memoryview is released (any access
    raises ValueError) by ``unmap()``, ``unimport()``, ``free()`` and garbage
    collection, so it can never point at unmapped memory. Views derived from
    it (slices, casts, numpy arrays) keep their own reference to the mapping,
    which then stays mapped until they are gone.
    """

    __slots__ = ("_mm", "_mv", "_khandle")
    _kind = "var"
    _c_unimport = staticmethod(_c.var_unimport)
    _c_free = staticmethod(_c.var_free)

    @classmethod
    def _adopt(cls, dev: "Device", handle: int, imported: bool):
        obj = super()._adopt(dev, handle, imported)
        obj._mm = None
        obj._mv = None
        obj._khandle = None
        return obj

    def attrs(self) -> Tuple[int, int, int]:
        """(page_id, length, mmap_off) in one call."""
        page_id, length, mmap_off = _c.var_attrs(self._h)
        return page_id, length, mmap_off

    @property
    def handle(self) -> int:
        """The VAR's kernel handle (the same in every process sharing it).

        The C API has no accessor for it; it is read once from the export
        blob, where every importer finds the same value.
        """
        if self._khandle is None:
            self._khandle = int(json.loads(_c.blob_describe(self.export()))["handle"])
        return self._khandle

    @property
    def page_id(self) -> int:
        """The VAR's page id (the same in every process)."""
        return self.attrs()[0]

    @property
    def length(self) -> int:
        """The length of the VAR page in bytes."""
        return self.attrs()[1]

    @property
    def mmap_off(self) -> int:
        """The offset at which the page is mapped through the device fd."""
        return self.attrs()[2]

    def export(self) -> bytes:
        """The VAR's export blob (bytes) for import elsewhere."""
        return _c.var_export(self._h)

    def map(self) -> memoryview:
        """A writable memoryview of the VAR page, shared with every process
        that maps it. Repeated calls return the same view until unmap()."""
        if self._mv is not None:
            return self._mv
        _, length, offset = _c.var_attrs(self._h)  # raises if stale
        mm = mmap.mmap(self._dev.fd, length, mmap.MAP_SHARED,
                       mmap.PROT_READ | mmap.PROT_WRITE, offset=offset)
        self._mm, self._mv = mm, memoryview(mm)
        return self._mv

    @property
    def mapped(self) -> bool:
        """True between map() and unmap()."""
        return self._mv is not None

    def _drop_mapping(self) -> None:
        mv, mm = self._mv, self._mm
        self._mv = self._mm = None
        if mv is not None:
            try:
                mv.release()
            except BufferError:  # something holds a buffer export of the view
                pass
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # derived views still use it; it unmaps with them
                pass

    def unmap(self) -> None:
        """Unmap the page; the memoryview from map() is released (any access
        raises ValueError). A no-op when not mapped; raises if stale."""
        _c.var_unmap(self._h)  # the status check: stale handles raise
        self._drop_mapping()

    def unimport(self) -> None:
        """Unmap, then release this process's handle; the VAR lives on."""
        self._drop_mapping()
        super().unimport()

    def free(self) -> None:
        """Unmap, then destroy the VAR for every process."""
        self._drop_mapping()
        super().free()

    def __del__(self) -> None:
        if getattr(self, "_mv", None) is not None or getattr(self, "_mm", None) is not None:
            self._drop_mapping()
        super().__del__()

    def _repr_state(self) -> str:
        state = super()._repr_state()
        return state + (" mapped" if self._mv is not None else "")

