# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Blobs: what crosses process boundaries (plain bytes, or their text form).

Blobs are checked by the C library (magic, version, kind, length,
checksum); these helpers only convert and describe them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from . import _rshare as _c
from ._errors import Error, InvalidArgument, NotFound

__all__ = ["inspect", "to_text", "from_text", "kind"]

BytesLike = Union[bytes, bytearray, memoryview]


def kind_name(value: int) -> str:
    """The library's name of an enum rshare_kind value (rshare_kind_name())."""
    return _c.kind_name(value) or f"unknown({value})"


def provider_name(value: int) -> str:
    """The library's name of an enum rshare_provider value (rshare_provider_name())."""
    return _c.provider_name(value) or f"unknown({value})"

# Every scalar field, in rshare_blob_describe()'s order; a kind lacks some.
_FIELDS = [(name.lower(), getattr(_c, "RSHARE_FIELD_" + name)) for name in (
    "HANDLE", "SERIAL", "PAGE_ID", "PD_HANDLE", "PD_SERIAL", "ADDR", "LENGTH",
    "MMAP_OFF", "LKEY", "RKEY", "ACCESS", "MEM_DEV", "MEM_INO", "LEDGER")]


def inspect(blob: Union[BytesLike, str]) -> Dict[str, Any]:
    """The fields of a valid blob (bytes or text form) as a dict: kind
    ("pd"|"var"|"mr"|"dm"|"buf"), provider ("hw"|"sim"), guid and table (hex
    strings), handle, serial, and the kind's own fields: for VARs page_id,
    length, mmap_off; for MRs pd_handle, pd_serial, addr, length, lkey, rkey,
    access; for DM length; for buffers ("buf") the MR's and mem_dev, mem_ino (the
    memfd's identity); ledger, the ledger serial of a hardware blob made in a
    context with a ledger. Read with rshare_blob_field(), one field at a time."""
    if isinstance(blob, str):
        blob = _c.blob_from_text(blob)
    kind_value = _c.blob_field(blob, _c.RSHARE_FIELD_KIND)  # validates the blob
    fields: Dict[str, Any] = {
        "kind": kind_name(kind_value),
        "provider": provider_name(_c.blob_field(blob, _c.RSHARE_FIELD_PROVIDER)),
        "guid": "0x%016x" % _c.blob_field(blob, _c.RSHARE_FIELD_GUID),
        "table": "0x%016x" % _c.blob_field(blob, _c.RSHARE_FIELD_TABLE),
    }
    for name, field in _FIELDS:
        try:
            fields[name] = _c.blob_field(blob, field)
        except NotFound:
            pass  # a field of another kind
    return fields


def to_text(blob: BytesLike) -> str:
    """The text form of a valid blob: "rshare:" + unpadded base64url, safe in
    environment variables, command lines and JSON."""
    return _c.blob_to_text(blob)


def from_text(text: str) -> bytes:
    """The blob bytes of a text form made by to_text() (validated)."""
    if not isinstance(text, str):
        raise TypeError(f"from_text() expects str, not {type(text).__name__}")
    return _c.blob_from_text(text)


def kind(blob: BytesLike) -> str:
    """"pd", "var", "mr" or "dm", after validating the blob."""
    return kind_name(_c.blob_kind(blob))


def split(payload: BytesLike) -> Optional[List[bytes]]:
    """The blobs a payload is made of (rshare_blob_size() frames each), or
    None if it is not a sequence of valid blobs."""
    out, off, view = [], 0, memoryview(payload)
    try:
        while off < len(view):
            n = _c.blob_size(view[off:])
            _c.blob_kind(view[off:off + n])
            out.append(bytes(view[off:off + n]))
            off += n
    except Error:
        return None
    return out


def import_all(device: Any, blobs: List[bytes],
               fds: Optional[List[int]] = None) -> Dict[str, List[Any]]:
    """Import every blob into device, each by its kind, as a dict from kind
    name to the objects imported, in blob order. An object that lives in a
    PD (its blob has a pd_handle: an MR, a buffer) goes into the PD imported
    here with that handle, and is skipped if there is none; every other
    object into the device. A buffer takes the next of ``fds`` (its memory,
    received with the blobs; the caller still closes them). On failure,
    what was imported is unimported and the error raised."""
    by_kind: Dict[str, List[Any]] = {}
    imported: List[Any] = []
    owners: Dict[int, Any] = {}
    try:
        for in_pd in (False, True):
            for blob in blobs:
                value = _c.blob_kind(blob)
                try:
                    pd_handle: Optional[int] = _c.blob_field(blob, _c.RSHARE_FIELD_PD_HANDLE)
                except NotFound:
                    pd_handle = None
                if (pd_handle is not None) != in_pd:
                    continue
                owner = device if pd_handle is None else owners.get(pd_handle)
                if owner is None:
                    continue
                if value == _c.RSHARE_KIND_BUF:
                    if not fds:
                        raise InvalidArgument("a buffer blob came without its memory fd",
                                              _c.RSHARE_E_INVAL)
                    obj = owner.import_buffer(blob, fds.pop(0))
                else:
                    obj = owner._import(value, blob)
                imported.append(obj)
                by_kind.setdefault(kind_name(value), []).append(obj)
                if value == _c.RSHARE_KIND_PD:
                    owners.setdefault(obj.handle, obj)
    except BaseException:
        for obj in reversed(imported):
            try:
                obj.unimport()
            except Error:
                pass
        raise
    return by_kind
