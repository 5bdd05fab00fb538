# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""rshare: share RDMA device contexts, PDs, VARs, MRs and device memory
between processes.

    import rshare
    with rshare.open("sim0") as dev, dev.alloc_pd() as pd:
        blob = pd.export()          # bytes: send them anywhere
        # in another process sharing dev (fd passing, rshare.send/recv,
        # multiprocessing): dev.import_pd(blob)

Objects: Device (rshare.open, Device.from_fd, rshare.recv), PD, Var and DM
(Device.alloc_*/import_*), MR (PD.reg_mr/import_mr). Named shares:
rshare.serve (a broker in this process), rshare.publish, rshare.attach,
rshare.shares, rshare.waiting; rshare.aio: recv and attach on an asyncio
loop. Errors: rshare.Error and one subclass per C status. The compiled
layer is rshare._rshare (SWIG over rshare.h).
"""

from typing import NamedTuple

from . import _rshare
from ._errors import (Error, InvalidArgument, OutOfMemory, NoDevice, Unsupported,
                      StaleHandleError, Busy, BufferTooSmall, BlobError, BlobCorrupt,
                      BlobVersion, BlobKind, DeviceMismatch, NotFound, PermissionDenied,
                      SystemCallError, ProtocolError, WouldBlock, FdMismatch, error_class)
from ._blob import inspect, to_text, from_text, kind
from ._objects import PD, Var, MR, DM, Buffer, Access, MRAttrs
from ._device import Caps, Device, DeviceInfo, devices
from ._device import open as open  # public, but left out of __all__ (see below)
from ._channel import send, recv, recv_fds, recv_objects
from ._broker import (Broker, Share, Attached, serve, publish, attach, shares, waiting,
                      withdraw)

#: The C library's version, "MAJOR.MINOR.PATCH".
__version__: str = _rshare.version()


class VersionInfo(NamedTuple):
    """The C library's version as numbers (rshare.version_info)."""
    major: int
    minor: int
    patch: int


#: The C library's version, e.g. VersionInfo(major=1, minor=1, patch=0).
version_info: VersionInfo = VersionInfo(*divmod(_rshare.version_number() // 100, 100),
                                        _rshare.version_number() % 100)

#: Upper bound of an export blob, in bytes.
BLOB_MAX: int = _rshare.RSHARE_BLOB_MAX
#: Upper bound of a channel payload, in bytes.
PAYLOAD_MAX: int = _rshare.RSHARE_PAYLOAD_MAX
#: VAR allocation flag (as MLX5DV_VAR_ALLOC_FLAG_TLP).
VAR_FLAG_TLP: int = _rshare.RSHARE_VAR_FLAG_TLP


def last_error() -> str:
    """This thread's last C failure text ("" if none)."""
    return _rshare.last_error()


# What `from rshare import *` brings in: everything public except open(),
# which would shadow the builtin (call it as rshare.open()).
__all__ = [
    "__version__", "version_info", "VersionInfo", "BLOB_MAX", "PAYLOAD_MAX", "VAR_FLAG_TLP",
    "Device", "DeviceInfo", "Caps", "PD", "Var", "MR", "MRAttrs", "Access", "DM", "Buffer",
    "devices", "send", "recv", "recv_fds", "recv_objects",
    "Broker", "Share", "Attached", "serve", "publish", "attach", "shares", "waiting", "withdraw",
    "inspect", "to_text", "from_text", "kind", "last_error", "error_class",
    "Error", "InvalidArgument", "OutOfMemory", "NoDevice", "Unsupported",
    "StaleHandleError", "Busy", "BufferTooSmall", "BlobError", "BlobCorrupt",
    "BlobVersion", "BlobKind", "DeviceMismatch", "NotFound", "PermissionDenied",
    "SystemCallError", "ProtocolError", "WouldBlock", "FdMismatch",
]

# Show the public classes as rshare.X (tracebacks, reprs, pickles of errors).
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type):
        _obj.__module__ = __name__
del _name, _obj
