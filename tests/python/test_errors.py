# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The exception classes: one per C status, bound to the C status table."""

import pickle

import pytest

import rshare

C = rshare._rshare

EXPECTED = {
    "RSHARE_E_INVAL": (rshare.InvalidArgument, ()),
    "RSHARE_E_NOMEM": (rshare.OutOfMemory, (MemoryError,)),
    "RSHARE_E_NODEV": (rshare.NoDevice, ()),
    "RSHARE_E_UNSUPPORTED": (rshare.Unsupported, ()),
    "RSHARE_E_STALE": (rshare.StaleHandleError, ()),
    "RSHARE_E_BUSY": (rshare.Busy, ()),
    "RSHARE_E_NOSPACE": (rshare.BufferTooSmall, ()),
    "RSHARE_E_BLOB_CORRUPT": (rshare.BlobCorrupt, (rshare.BlobError,)),
    "RSHARE_E_BLOB_VERSION": (rshare.BlobVersion, (rshare.BlobError,)),
    "RSHARE_E_BLOB_KIND": (rshare.BlobKind, (rshare.BlobError,)),
    "RSHARE_E_DEVICE_MISMATCH": (rshare.DeviceMismatch, ()),
    "RSHARE_E_NOT_FOUND": (rshare.NotFound, ()),
    "RSHARE_E_PERM": (rshare.PermissionDenied, (PermissionError, OSError)),
    "RSHARE_E_IO": (rshare.SystemCallError, (OSError,)),
    "RSHARE_E_PROTOCOL": (rshare.ProtocolError, ()),
    "RSHARE_E_AGAIN": (rshare.WouldBlock, (BlockingIOError, OSError)),
}


def c_statuses():
    """(code, name) of every status the C library knows, from the library."""
    code, found = -1, []
    while C.status_name(code) != "RSHARE_E_UNKNOWN":
        found.append((code, C.status_name(code)))
        code -= 1
    return found


def test_every_c_status_has_its_class():
    statuses = c_statuses()
    assert [name for _, name in statuses] == list(EXPECTED)  # -1 .. -16, in order
    for code, name in statuses:
        cls, extra_bases = EXPECTED[name]
        assert rshare.error_class(code) is cls
        assert (cls.code, cls.name) == (code, name)
        assert getattr(C, name) == code  # the header constant agrees
        assert issubclass(cls, rshare.Error) and issubclass(cls, Exception)
        for base in extra_bases:
            assert issubclass(cls, base), (cls, base)
    assert rshare.error_class(-999) is rshare.Error
    assert rshare.error_class(0) is rshare.Error  # RSHARE_OK never raises


@pytest.mark.parametrize("name", list(EXPECTED))
def test_class_instances_carry_code_name_errno(name):
    cls, _ = EXPECTED[name]
    exc = cls("rshare_something: cause", cls.code, 5)
    assert (exc.code, exc.name, exc.errno) == (cls.code, name, 5)
    assert str(exc) == "rshare_something: cause"
    # Exceptions cross process boundaries (Pool workers re-raise them).
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls
    assert (back.code, back.name, back.errno, str(back)) == (exc.code, name, 5, str(exc))


def test_raised_errors_come_from_the_c_side(dev):
    # One provoked failure per status sim0 can produce; each message is the
    # C library's rshare_last_error() text, naming the failing function.
    cases = []
    with pytest.raises(rshare.StaleHandleError) as info:
        C.pd_unimport(0x7777_0000)  # a garbage token: refused, never followed
    cases.append(info.value)
    with pytest.raises(rshare.InvalidArgument) as info:
        C.pd_alloc(None)
    cases.append(info.value)
    with pytest.raises(rshare.InvalidArgument):
        C.pd_import(dev._h, None)
    with pytest.raises(rshare.NoDevice) as info:
        rshare.open("mlx5_nonexistent")
    cases.append(info.value)
    with pytest.raises(rshare.BlobCorrupt) as info:
        rshare.inspect(b"\0" * 44)
    cases.append(info.value)
    for exc in cases:
        assert str(exc) and str(exc).startswith("rshare_")
        assert exc.name == C.status_name(exc.code)
        assert isinstance(exc.errno, int)


def test_system_call_error_reports_errno():
    import socket
    a, b = socket.socketpair()
    a.close()
    with b, pytest.raises(rshare.SystemCallError) as info:
        rshare.recv(b)
    assert info.value.code == C.RSHARE_E_IO
    assert info.value.errno == C.last_errno()


def test_raw_module_rejects_bad_argument_types(dev):
    with pytest.raises(TypeError):
        C.pd_import(dev._h, 12345)  # not bytes-like
    with pytest.raises(TypeError):
        C.pd_alloc("not a handle")
    with pytest.raises(TypeError):
        C._set_error_classes([])
