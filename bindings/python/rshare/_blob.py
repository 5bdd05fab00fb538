# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Blobs: what crosses process boundaries (plain bytes, or their text form).

Blobs are checked by the C library (magic, version, kind, length,
checksum); these helpers only convert and describe them.
"""

from __future__ import annotations

from typing import Any, Dict, Union

from . import _rshare as _c
from ._errors import NotFound

__all__ = ["inspect", "to_text", "from_text", "kind"]

BytesLike = Union[bytes, bytearray, memoryview]


_KINDS = {_c.RSHARE_KIND_PD: "pd", _c.RSHARE_KIND_VAR: "var", _c.RSHARE_KIND_MR: "mr",
          _c.RSHARE_KIND_DM: "dm", _c.RSHARE_KIND_BUF: "buf"}
_PROVIDERS = {_c.RSHARE_PROVIDER_HW: "hw", _c.RSHARE_PROVIDER_SIM: "sim"}
# Every scalar field, in rshare_blob_describe()'s order; a kind lacks some.
_FIELDS = [(name.lower(), getattr(_c, "RSHARE_FIELD_" + name)) for name in (
    "HANDLE", "SERIAL", "PAGE_ID", "PD_HANDLE", "PD_SERIAL", "ADDR", "LENGTH",
    "MMAP_OFF", "LKEY", "RKEY", "ACCESS", "MEM_DEV", "MEM_INO")]


def inspect(blob: Union[BytesLike, str]) -> Dict[str, Any]:
    """The fields of a valid blob (bytes or text form) as a dict: kind
    ("pd"|"var"|"mr"|"dm"|"buf"), provider ("hw"|"sim"), guid and table (hex
    strings), handle, serial, and the kind's own fields: for VARs page_id,
    length, mmap_off; for MRs pd_handle, pd_serial, addr, length, lkey, rkey,
    access; for DM length; for buffers ("buf") the MR's and mem_dev, mem_ino (the
    memfd's identity). Read with rshare_blob_field(), one field at a time."""
    if isinstance(blob, str):
        blob = _c.blob_from_text(blob)
    kind_value = _c.blob_field(blob, _c.RSHARE_FIELD_KIND)  # validates the blob
    fields: Dict[str, Any] = {
        "kind": _KINDS.get(kind_value, f"unknown({kind_value})"),
        "provider": _PROVIDERS.get(_c.blob_field(blob, _c.RSHARE_FIELD_PROVIDER), "?"),
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
    value = _c.blob_kind(blob)
    return _KINDS.get(value, f"unknown({value})")
