"""Blobs: what crosses process boundaries (plain bytes, or their text form).

Blobs are checked by the C library (magic, version, kind, length,
checksum); these helpers only convert and describe them.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Union

from . import _rshare as _c

__all__ = ["inspect", "to_text", "from_text", "kind"]

BytesLike = Union[bytes, bytearray, memoryview]


def inspect(blob: Union[BytesLike, str]) -> Dict[str, Any]:
    """The fields of a valid blob (bytes or text form) as a dict: format,
    kind ("pd"|"var"), provider ("hw"|"sim"), guid and table (hex strings),
    handle, serial, and for VARs page_id, length, mmap_off."""
    if isinstance(blob, str):
        blob = _c.blob_from_text(blob)
    fields: Dict[str, Any] = json.loads(_c.blob_describe(blob))
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
    """"pd" or "var", after validating the blob."""
    value = _c.blob_kind(blob)
    return {_c.RSHARE_KIND_PD: "pd", _c.RSHARE_KIND_VAR: "var"}.get(value, f"unknown({value})")
