# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""PD, Var, MR and DM: shared objects allocated on or imported into a Device
(an MR lives in a PD: registered on it or imported into it).

Lifetime rules (the same for every class):
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
The rules are kept in C (bindings/python/ext/objects.c), the base type of both.
"""

from __future__ import annotations

import enum
import mmap
from typing import TYPE_CHECKING, Any, Dict, NamedTuple, NoReturn, Optional, SupportsIndex, Tuple, Union

from . import _rshare as _c
from ._errors import Error, InvalidArgument, _exit_cleanup

if TYPE_CHECKING:
    from ._device import Device

__all__ = ["PD", "Var", "MR", "DM", "Buffer", "Access", "MRAttrs"]

Blob = Union[bytes, bytearray, memoryview, str]


class Access(enum.IntFlag):
    """Memory region access flags (the IBV_ACCESS_* values)."""
    LOCAL_WRITE = _c.RSHARE_ACCESS_LOCAL_WRITE
    REMOTE_WRITE = _c.RSHARE_ACCESS_REMOTE_WRITE
    REMOTE_READ = _c.RSHARE_ACCESS_REMOTE_READ
    REMOTE_ATOMIC = _c.RSHARE_ACCESS_REMOTE_ATOMIC


class MRAttrs(NamedTuple):
    """An MR's attributes (MR.attrs())."""
    addr: int     # the registering process's address (meaningless elsewhere)
    length: int
    lkey: int
    rkey: int
    access: Access

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

    def native_address(self) -> int:
        """The address of the native rdma-core object behind this handle, as
        an int (for ctypes/cffi code that calls rdma-core itself): borrowed,
        valid until this handle is released. Raises Unsupported on a device
        without native objects (sim0)."""
        return int(getattr(_c, self._kind + "_native")(self))


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

    def reg_mr(self, buffer: Any, access: int = Access.LOCAL_WRITE) -> MR:
        """Register ``buffer`` (any writable buffer: bytearray, memoryview,
        mmap, numpy array, ...) as a memory region on this PD. The MR keeps
        the buffer exported (a bytearray cannot be resized) and alive until
        it is deregistered or unimported. While the MR lives, this PD's
        free() and unimport() raise Busy."""
        _check_access(access, "reg_mr")
        view = memoryview(buffer)  # raises TypeError for non-buffers
        if view.readonly:
            view.release()
            raise TypeError(f"reg_mr() needs a writable buffer, not a read-only "
                            f"{type(buffer).__name__}")
        try:
            handle = _c.mr_reg(self, view, int(access))
        except BaseException:
            view.release()
            raise
        mr: MR = _c._wrap(_c.RSHARE_KIND_MR, self, handle, False)
        mr._buffer = view
        _registered[id(view)] = view
        return mr

    def import_mr(self, blob: Blob) -> MR:
        """Import the MR described by ``blob`` (bytes, or its text form) into
        this PD, which must be (an import of) the PD it is registered on."""
        mr: MR = self._import(_c.RSHARE_KIND_MR, blob)
        return mr

    def alloc_buffer(self, n: int, access: int = Access.LOCAL_WRITE) -> Buffer:
        """A shared buffer of ``n`` zeroed bytes on this PD: memory in a
        sealed memfd, registered once (an MR with ``access``) and shared with
        its keys. Send it with rshare.send(sock, dev, buf); view it with
        memoryview(buf), numpy.frombuffer(buf) or numpy.from_dlpack(buf)."""
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"alloc_buffer() argument 'n' must be int, not {type(n).__name__}")
        if n <= 0:
            raise InvalidArgument(f"alloc_buffer: size {n} must be positive", _c.RSHARE_E_INVAL)
        _check_access(access, "alloc_buffer")
        buf: Buffer = _c._wrap(_c.RSHARE_KIND_BUF, self, _c.buf_alloc(self, n, int(access)), False)
        return buf

    def import_buffer(self, blob: Blob, fd: int) -> Buffer:
        """Import the buffer described by ``blob`` with its memory ``fd`` (as
        received with it) into this PD, the PD it was allocated on. The fd is
        checked to be that buffer's memfd (FdMismatch otherwise) and
        duplicated: the caller still closes its own."""
        if isinstance(blob, str):
            blob = _c.blob_from_text(blob)
        buf: Buffer = _c._wrap(_c.RSHARE_KIND_BUF, self, _c.buf_import(self, blob, fd), True)
        return buf


class _Memory(_Shared, _c.Memory):
    """Objects with memory Python code touches (Buffer, Var): the buffer
    protocol (memoryview(obj), numpy.frombuffer(obj), numpy.asarray(obj),
    zero-copy) and DLPack (numpy.from_dlpack(obj)). While any such view is
    alive, unimport(), free() and unmap() raise BufferError."""

    __slots__ = ()


class Var(_Memory):
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
        """The VAR's kernel handle (the same in every process sharing it)."""
        return _c.var_handle(self)

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
        raises ValueError). A no-op when not mapped; raises if stale, and
        BufferError while views of the Var itself (memoryview(var), numpy
        arrays over it) are alive."""
        if self._exports:
            raise BufferError(f"{self._exports} view(s) of this VAR's page are alive: "
                              "release them first")
        _c.var_unmap(self)  # the status check: stale handles raise
        self._release_mapping()

    def _repr_state(self) -> str:
        state = super()._repr_state()
        return state + (" mapped" if self._mapping is not None else "")


# Memory registered in this process, by id: held until its MR is
# deregistered. An MR only unimported here (explicitly or by the collector)
# leaves its registration live for the processes that imported it, and a
# registration must never point at memory the allocator gave back.
_registered: Dict[int, memoryview] = {}


class _Registered:
    """What an MR and a shared buffer (one MR over its memory) have alike:
    the PD they live in and the registration's attributes, the same in
    every process sharing it. ``_mr()`` names the MR to ask."""

    __slots__ = ()

    def _mr(self) -> Any:
        raise NotImplementedError

    @property
    def pd(self) -> PD:
        """The PD it lives in."""
        pd: PD = _c.Object.device.__get__(self)
        return pd

    @property
    def device(self) -> Device:
        """The Device of its PD."""
        return self.pd.device

    def attrs(self) -> MRAttrs:
        """(addr, length, lkey, rkey, access) in one call: the registering
        process's address and the keys every process shares."""
        addr, length, lkey, rkey, access = _c.mr_attrs(self._mr())
        return MRAttrs(addr, length, lkey, rkey, Access(access))

    @property
    def addr(self) -> int:
        """The registered address (the registering process's): what work
        requests name."""
        return self.attrs().addr

    @property
    def lkey(self) -> int:
        """The local key."""
        return self.attrs().lkey

    @property
    def rkey(self) -> int:
        """The remote key."""
        return self.attrs().rkey

    @property
    def handle(self) -> int:
        """The MR's kernel handle (the same in every process sharing it)."""
        return int(_c.mr_handle(self._mr()))

    def _repr_handle(self) -> int:
        return self.handle


class MR(_Registered, _Shared):
    """A memory region: registered on a PD here (PD.reg_mr) or imported into
    a PD (PD.import_mr). ``dereg()`` (or ``free()``) deregisters it for every
    process; ``unimport()`` releases this process's handle. An imported MR's
    ``addr`` is the registering process's address: meaningless here, as on
    hardware; its keys are the shared registration's."""

    __slots__ = ("_buffer",)
    _kind = "mr"
    _buffer: Optional[memoryview]  # the registered memory, held while registered

    def _mr(self) -> Any:
        return self

    @property
    def length(self) -> int:
        """Registered length in bytes."""
        return self.attrs().length

    @property
    def access(self) -> Access:
        """The access flags."""
        return self.attrs().access

    def export(self) -> bytes:
        """The MR's export blob (bytes), importable into its PD elsewhere."""
        return _c.mr_export(self)

    def free(self) -> None:
        """Deregister the MR for every process and release the handle; the
        registered buffer is let go afterwards."""
        super().free()
        buffer: Optional[memoryview] = getattr(self, "_buffer", None)
        if buffer is not None:
            self._buffer = None
            del _registered[id(buffer)]
            buffer.release()

    dereg = free

    def unimport(self) -> None:
        """Release this process's handle. The registration lives on for the
        processes that imported it, so memory registered here stays
        exported and alive for the rest of this process (deregister with
        free() to let it go); the same holds when the MR is collected."""
        super().unimport()
        self._buffer = None

    def __exit__(self, *exc_info: object) -> None:
        if self.live:
            exc = exc_info[1] if len(exc_info) > 1 else None
            _exit_cleanup(self.unimport if self.imported else self.free,
                          exc if isinstance(exc, BaseException) else None)


class DM(_Memory):
    """Device memory: allocated on a Device (Device.alloc_dm) or imported
    (Device.import_dm). Read and write it with read()/write(): a write in
    one process is read by every other that imported it. Where the device
    maps it (Caps.DM_MAP: sim0; mlx5, whose mapping is device memory to be
    accessed in aligned 4-byte words, e.g. a numpy uint32 view),
    ``memoryview(dm)``, ``numpy.frombuffer(dm)`` and DLPack view it in place
    (rshare_dm_map); ``unmap()`` drops that mapping, refused while such views
    live."""

    __slots__ = ()
    _kind = "dm"

    @property
    def length(self) -> int:
        """The length in bytes."""
        return _c.dm_length(self)

    @property
    def handle(self) -> int:
        """The DM's kernel handle (the same in every process sharing it)."""
        return _c.dm_handle(self)

    def _repr_handle(self) -> int:
        return self.handle

    def export(self) -> bytes:
        """The DM's export blob (bytes) for import elsewhere."""
        return _c.dm_export(self)

    def write(self, offset: int, data: Any) -> None:
        """Copy ``data`` (bytes-like) into the device memory at ``offset``.
        A range past the end raises InvalidArgument and writes nothing."""
        _c.dm_write(self, _offset(offset), data)

    def unmap(self) -> None:
        """Unmap the device memory from this process (rshare_dm_unmap; a
        no-op when not mapped). BufferError while views of it are alive."""
        if self._exports:
            raise BufferError(f"{self._exports} view(s) of this DM's memory are alive: "
                              "release them first")
        _c.dm_unmap(self)

    def read(self, offset: int, n: int) -> bytes:
        """``n`` bytes of the device memory at ``offset``. A range past the
        end raises InvalidArgument."""
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"read() argument 'n' must be int, not {type(n).__name__}")
        if n < 0:
            raise ValueError(f"read() argument 'n' must be >= 0, not {n}")
        data: bytes = _c.dm_read(self, _offset(offset), n)
        return data


class Buffer(_Registered, _Memory):
    """A shared buffer (PD.alloc_buffer, PD.import_buffer): memory in a
    sealed memfd that every process sharing it maps, plus one MR over it,
    registered once by the allocating process and imported by the others,
    so all use the same keys. ``memoryview(buf)``, ``numpy.frombuffer(buf)``
    and ``numpy.from_dlpack(buf)`` are zero-copy views at ``buf.ptr``.

    Work requests use the registered address (``buf.addr``, the
    allocator's): ``buf.remote_addr(offset)`` turns an offset into it.
    ``free()`` deregisters the MR for every process; the memory lives until
    the last process unmaps it."""

    __slots__ = ()
    _kind = "buf"

    def _mr(self) -> Any:
        return _c.buf_mr(self)

    @property
    def ptr(self) -> int:
        """This process's address of the memory (rshare_buf_ptr)."""
        addr, _ = _c.buf_ptr(self)
        return int(addr)

    def __len__(self) -> int:
        _, length = _c.buf_ptr(self)
        return int(length)

    @property
    def nbytes(self) -> int:
        """The size in bytes."""
        return len(self)

    @property
    def fd(self) -> int:
        """The memory's memfd: borrowed (owned by the buffer, closed by
        unimport/free); send it with the blob."""
        return int(_c.buf_fd(self))

    def remote_addr(self, offset: int = 0) -> int:
        """The registered address of byte ``offset``: what a work request
        names for ``buf.ptr + offset`` in this process."""
        offset = _offset(offset)
        if offset > len(self):
            raise ValueError(f"offset {offset} is past the buffer's {len(self)} bytes")
        return self.addr + offset

    def native_address(self) -> int:
        """The address of the MR's struct ibv_mr (borrowed; Unsupported on sim0)."""
        return int(_c.mr_native(_c.buf_mr(self)))

    def export(self) -> bytes:
        """The buffer's export blob; it travels with the memory fd (``fd``)."""
        return _c.buf_export(self)


def _check_access(access: int, call: str) -> None:
    if not isinstance(access, int) or isinstance(access, bool):
        raise TypeError(f"{call}() argument 'access' must be int, not {type(access).__name__}")
    if not 0 <= access <= 0xFFFFFFFF:
        raise InvalidArgument(f"{call}: access {access:#x} out of range", _c.RSHARE_E_INVAL)


def _offset(offset: int) -> int:
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TypeError(f"offset must be int, not {type(offset).__name__}")
    if offset < 0:
        raise ValueError(f"offset must be >= 0, not {offset}")
    return offset if offset < 1 << 64 else (1 << 64) - 1


_c._register(_c.RSHARE_KIND_PD, PD)
_c._register(_c.RSHARE_KIND_VAR, Var)
_c._register(_c.RSHARE_KIND_MR, MR)
_c._register(_c.RSHARE_KIND_DM, DM)
_c._register(_c.RSHARE_KIND_BUF, Buffer)
