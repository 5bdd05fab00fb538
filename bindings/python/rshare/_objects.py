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
    here and unimported if it was imported;
  * in a child made by fork(), the objects inherited from the parent are
    released locally (never freed) when the child closes their Device.
The rules are kept in C (swig/python/objects.c), the base type of both.
"""

from __future__ import annotations

import json
import mmap
from typing import TYPE_CHECKING, NoReturn, SupportsIndex, Tuple

from . import _rshare as _c
from ._errors import Error

if TYPE_CHECKING:
    from ._device import Device

__all__ = ["PD", "Var"]

_PICKLE_HINT = ("{0} objects cannot be pickled: send {1}.export() (plain bytes) "
                "and call dev.import_{1}(blob) in the other process")


class _Shared(_c.Object):
    """What PD and Var have in common. The handle, the Device, the state,
    ``unimport()``, ``free()``, the context manager and the release at
    collection live in the C base type (rshare._rshare.Object): making and
    dropping an object costs no Python-level finalizer."""

    __slots__ = ()
    _kind = "object"

    if TYPE_CHECKING:  # the C base's getter, typed with the package's class
        @property
        def device(self) -> Device:
            """The Device this object was allocated on or imported into."""

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError(_PICKLE_HINT.format(type(self).__name__, self._kind))

    def _repr_state(self) -> str:
        how = "imported" if self.imported else "allocated"
        where = self.device._repr_name()
        if not self.live:
            return f"{how} on {where}, released"
        try:
            return f"handle={self._repr_handle()} {how} on {where}"
        except Error as exc:
            return f"{how} on {where}, stale ({exc.name})"

    def _repr_handle(self) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<rshare.{type(self).__name__} {self._repr_state()}>"


class PD(_Shared):
    """A protection domain, allocated here or imported from a blob."""

    __slots__ = ()
    _kind = "pd"

    @property
    def handle(self) -> int:
        """The PD's kernel handle (meaningful within its object table)."""
        return _c.pd_handle(self)

    def _repr_handle(self) -> int:
        return self.handle

    def export(self) -> bytes:
        """The PD's export blob (bytes, at most 128) for import elsewhere."""
        return _c.pd_export(self)


class Var(_Shared):
    """An mlx5 VAR (a doorbell-like page), allocated here or imported.

    ``map()`` returns a writable memoryview of the page through Python's
    mmap module on the device fd; the memoryview is released (any access
    raises ValueError) by ``unmap()``, ``unimport()``, ``free()`` and garbage
    collection, so it can never point at unmapped memory. Views derived from
    it (slices, casts, numpy arrays) keep their own reference to the mapping,
    which then stays mapped until they are gone.
    """

    __slots__ = ()
    _kind = "var"

    def attrs(self) -> Tuple[int, int, int]:
        """(page_id, length, mmap_off) in one call."""
        page_id, length, mmap_off = _c.var_attrs(self)
        return page_id, length, mmap_off

    @property
    def handle(self) -> int:
        """The VAR's kernel handle (the same in every process sharing it).

        The C API has no accessor for it; it is read from the export blob,
        where every importer finds the same value.
        """
        return int(json.loads(_c.blob_describe(self.export()))["handle"])

    def _repr_handle(self) -> int:
        return self.handle

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
        return _c.var_export(self)

    def map(self) -> memoryview:
        """A writable memoryview of the VAR page, shared with every process
        that maps it. Repeated calls return the same view until unmap()."""
        if self._mapping is not None:
            view: memoryview = self._mapping[0]
            return view
        _, length, offset = _c.var_attrs(self)  # raises if stale
        mm = mmap.mmap(self.device.fd, length, mmap.MAP_SHARED,
                       mmap.PROT_READ | mmap.PROT_WRITE, offset=offset)
        view = memoryview(mm)
        # Released in this order (the view, then the mapping) by unmap(),
        # unimport(), free() and collection: see _rshare.Object._mapping.
        self._mapping = (view, mm)
        return view

    @property
    def mapped(self) -> bool:
        """True between map() and unmap()."""
        return self._mapping is not None

    def unmap(self) -> None:
        """Unmap the page; the memoryview from map() is released (any access
        raises ValueError). A no-op when not mapped; raises if stale."""
        _c.var_unmap(self)  # the status check: stale handles raise
        self._release_mapping()

    def _repr_state(self) -> str:
        state = super()._repr_state()
        return state + (" mapped" if self._mapping is not None else "")


_c._register(_c.RSHARE_KIND_PD, PD)
_c._register(_c.RSHARE_KIND_VAR, Var)
