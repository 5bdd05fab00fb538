# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The rshare exception hierarchy, bound to the C library's status table.

Every C status below 0 has one class here. The mapping from status code to
class is built at import from ``rshare_status_name()``, so a renumbered or
new status cannot silently get the wrong class; the classes are registered
with the compiled module, which raises them with ``rshare_last_error()`` as
the message.
"""

from __future__ import annotations

import warnings
from typing import Callable, Dict, List, Optional, Tuple, Type

from . import _rshare as _c

__all__ = [
    "Error", "InvalidArgument", "OutOfMemory", "NoDevice", "Unsupported",
    "StaleHandleError", "Busy", "BufferTooSmall", "BlobError", "BlobCorrupt",
    "BlobVersion", "BlobKind", "DeviceMismatch", "NotFound", "PermissionDenied",
    "SystemCallError", "ProtocolError", "WouldBlock", "FdMismatch", "error_class",
]


class Error(Exception):
    """A failed rshare call.

    ``code`` is the C status (e.g. -5), ``name`` its symbolic name
    ("RSHARE_E_STALE"), ``errno`` the OS errno behind it (0 if none), and the
    message is the C library's ``rshare_last_error()`` text.
    """

    #: The C status of this class (set at import from the C status table;
    #: 0 on the base class, which is raised only for an unknown status).
    code: int = 0
    #: The C symbolic name of this class's status.
    name: str = "RSHARE_E_UNKNOWN"
    #: The OS errno behind the failure, 0 if none.
    errno: int

    def __init__(self, message: str, code: Optional[int] = None, errno: int = 0) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
            self.name = _c.status_name(code)
        self.errno = errno

    def __reduce__(self) -> Tuple[Type["Error"], Tuple[str, int, int]]:
        # Explicit, so the OSError subclasses keep errno (a slot, not in
        # __dict__) when a Pool worker's exception is sent to the parent.
        message = self.args[0] if self.args else ""
        return type(self), (message, self.code, self.errno)


class InvalidArgument(Error, ValueError):
    """RSHARE_E_INVAL: a NULL/None handle, a bad flag or a malformed argument
    (also a ValueError)."""


class OutOfMemory(Error, MemoryError):
    """RSHARE_E_NOMEM: out of memory, table slots or free VAR pages."""


class NoDevice(Error):
    """RSHARE_E_NODEV: no such device, or the fd is not a device context."""


class Unsupported(Error):
    """RSHARE_E_UNSUPPORTED: the provider or rdma-core lacks the operation."""


class StaleHandleError(Error):
    """RSHARE_E_STALE: the object was already freed, unimported or closed."""


class Busy(Error):
    """RSHARE_E_BUSY: still in use (e.g. closing a device with live PDs)."""


class BufferTooSmall(Error):
    """RSHARE_E_NOSPACE: an output did not fit (the binding sizes its buffers
    from the header's bounds, so this means a library/binding mismatch)."""


class BlobError(Error):
    """Base of the three ways a blob can be refused before import."""


class BlobCorrupt(BlobError):
    """RSHARE_E_BLOB_CORRUPT: bad magic, length or checksum."""


class BlobVersion(BlobError):
    """RSHARE_E_BLOB_VERSION: the blob format is newer than this library."""


class BlobKind(BlobError):
    """RSHARE_E_BLOB_KIND: a PD blob given where a VAR is expected, or back."""


class DeviceMismatch(Error):
    """RSHARE_E_DEVICE_MISMATCH: the blob comes from another device or object
    table (e.g. a separately opened sim0)."""


class NotFound(Error):
    """RSHARE_E_NOT_FOUND: the object no longer exists (freed by its owner)."""


class PermissionDenied(Error, PermissionError):
    """RSHARE_E_PERM: permission denied."""


class SystemCallError(Error, OSError):
    """RSHARE_E_IO: a system call failed; ``errno`` says which error."""


class ProtocolError(Error):
    """RSHARE_E_PROTOCOL: a channel or broker message that rshare did not send."""


class WouldBlock(Error, BlockingIOError):
    """RSHARE_E_AGAIN: nothing to receive yet on a non-blocking socket (nothing
    was consumed); wait for readability and call again (since 1.2). The
    Python calls that can meet it (rshare.recv with timeout 0, rshare.aio)
    handle it themselves."""
class FdMismatch(Error):
    """RSHARE_E_FD_MISMATCH: the fd given with a buffer's blob is not that
    buffer's memory (a regular file, another memfd, another size)."""


# The C names this module knows a class for. Statuses the C library has and
# this table lacks still get a class (built below), so nothing is lost.
_BY_NAME: Dict[str, Type[Error]] = {
    "RSHARE_E_INVAL": InvalidArgument,
    "RSHARE_E_NOMEM": OutOfMemory,
    "RSHARE_E_NODEV": NoDevice,
    "RSHARE_E_UNSUPPORTED": Unsupported,
    "RSHARE_E_STALE": StaleHandleError,
    "RSHARE_E_BUSY": Busy,
    "RSHARE_E_NOSPACE": BufferTooSmall,
    "RSHARE_E_BLOB_CORRUPT": BlobCorrupt,
    "RSHARE_E_BLOB_VERSION": BlobVersion,
    "RSHARE_E_BLOB_KIND": BlobKind,
    "RSHARE_E_DEVICE_MISMATCH": DeviceMismatch,
    "RSHARE_E_NOT_FOUND": NotFound,
    "RSHARE_E_PERM": PermissionDenied,
    "RSHARE_E_IO": SystemCallError,
    "RSHARE_E_PROTOCOL": ProtocolError,
    "RSHARE_E_AGAIN": WouldBlock,
    "RSHARE_E_FD_MISMATCH": FdMismatch,
}

_UNKNOWN = "RSHARE_E_UNKNOWN"
_BY_CODE: Dict[int, Type[Error]] = {}


def _bind_to_c() -> None:
    """Give each class its C code and register them with the compiled module."""
    classes: List[Optional[Type[Error]]] = [None]  # index 0 is RSHARE_OK: never raised
    # Numbers reserved for statuses not in this library leave gaps (None).
    lowest = min(getattr(_c, n) for n in dir(_c) if n.startswith("RSHARE_E_"))
    for code in range(-1, lowest - 1, -1):
        name = _c.status_name(code)
        if name == _UNKNOWN:
            classes.append(None)
            continue
        cls = _BY_NAME.get(name)
        if cls is None:  # a status newer than this file: still raise something precise
            cls = type(name, (Error,), {"__doc__": _c.strerror(code) + "."})
            _BY_NAME[name] = cls
        cls.code, cls.name = code, name
        _BY_CODE[code] = cls
        classes.append(cls)
    _c._set_error_classes(tuple(classes))


def error_class(code: int) -> Type[Error]:
    """The exception class raised for C status ``code`` (``Error`` if unknown)."""
    return _BY_CODE.get(code, Error)


_bind_to_c()


def _exit_cleanup(cleanup: Callable[[], None], exc: Optional[BaseException]) -> None:
    """Run a with block's cleanup. With the user's exception in flight, a
    cleanup failure must not replace it: it is added to it as a note (shown
    with its traceback; a RuntimeWarning before Python 3.11)."""
    try:
        cleanup()
    except Exception as failure:
        if exc is None:
            raise
        note = (f"rshare: leaving the with block, the cleanup failed: "
                f"{type(failure).__name__}: {failure}")
        if hasattr(exc, "add_note"):
            exc.add_note(note)
        else:
            warnings.warn(note, RuntimeWarning, stacklevel=3)
