# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A consumer of librshare.so.1 that compiles nothing: Python's ctypes (libffi
underneath) and the documented C ABI only, no SWIG module. The declarations
below are written from rshare.h the way any FFI user would write them; if a
1.x release breaks them, this test breaks.

Run (the library must be on the loader path):
    LD_LIBRARY_PATH=BUILD/lib /usr/bin/python3 -m pytest -q tests/abi/test_ctypes_consumer.py
"""

import ctypes
import json
import os
import socket
import subprocess
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from pathlib import Path

lib = ctypes.CDLL("librshare.so.1")

# Status codes and constants, as frozen in 1.0.
OK, E_INVAL, E_STALE, E_BUSY, E_NOSPACE, E_NOT_FOUND = 0, -1, -5, -6, -7, -12
KIND_PD, KIND_VAR, PROVIDER_SIM = 1, 2, 2
BLOB_MAX, TEXT_MAX = 128, 180

_size_p, _int_p = POINTER(c_size_t), POINTER(c_int)
API = {  # name: (restype, argtypes)
    "rshare_version": (c_char_p, []),
    "rshare_status_name": (c_char_p, [c_int]),
    "rshare_strerror": (c_char_p, [c_int]),
    "rshare_last_error": (c_char_p, []),
    "rshare_last_errno": (c_int, []),
    "rshare_devices_count": (c_int, [_size_p]),
    "rshare_devices_get": (c_int, [c_size_t, c_char_p, c_size_t, POINTER(c_uint64), _int_p]),
    "rshare_device_open": (c_int, [c_char_p, POINTER(c_void_p)]),
    "rshare_device_import": (c_int, [c_int, POINTER(c_void_p)]),
    "rshare_device_fd": (c_int, [c_void_p, _int_p]),
    "rshare_device_name": (c_int, [c_void_p, c_char_p, c_size_t, _size_p]),
    "rshare_device_guid": (c_int, [c_void_p, POINTER(c_uint64)]),
    "rshare_device_provider": (c_int, [c_void_p, _int_p]),
    "rshare_device_close": (c_int, [c_void_p]),
    "rshare_pd_alloc": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_pd_export": (c_int, [c_void_p, c_void_p, c_size_t, _size_p]),
    "rshare_pd_import": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_void_p)]),
    "rshare_pd_unimport": (c_int, [c_void_p]),
    "rshare_pd_free": (c_int, [c_void_p]),
    "rshare_pd_handle": (c_int, [c_void_p, POINTER(c_uint32)]),
    "rshare_var_alloc": (c_int, [c_void_p, c_uint32, POINTER(c_void_p)]),
    "rshare_var_export": (c_int, [c_void_p, c_void_p, c_size_t, _size_p]),
    "rshare_var_import": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_void_p)]),
    "rshare_var_unimport": (c_int, [c_void_p]),
    "rshare_var_free": (c_int, [c_void_p]),
    "rshare_var_attrs": (c_int, [c_void_p, POINTER(c_uint32), POINTER(c_uint32),
                                 POINTER(c_uint64)]),
    "rshare_var_map": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_var_unmap": (c_int, [c_void_p]),
    "rshare_blob_kind": (c_int, [c_void_p, c_size_t, _int_p]),
    "rshare_blob_describe": (c_int, [c_void_p, c_size_t, c_char_p, c_size_t, _size_p]),
    "rshare_blob_to_text": (c_int, [c_void_p, c_size_t, c_char_p, c_size_t, _size_p]),
    "rshare_blob_from_text": (c_int, [c_char_p, c_void_p, c_size_t, _size_p]),
    "rshare_channel_send": (c_int, [c_int, c_void_p, c_void_p, c_size_t]),
    "rshare_channel_recv": (c_int, [c_int, POINTER(c_void_p), c_void_p, c_size_t, _size_p]),
    # Since 1.1.
    "rshare_version_number": (c_int, []),
    "rshare_device_caps": (c_int, [c_void_p, POINTER(c_uint32)]),
    "rshare_device_native": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_pd_native": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_var_handle": (c_int, [c_void_p, POINTER(c_uint32)]),
    "rshare_var_native": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_mr_reg": (c_int, [c_void_p, c_void_p, c_size_t, c_uint32, POINTER(c_void_p)]),
    "rshare_mr_export": (c_int, [c_void_p, c_void_p, c_size_t, _size_p]),
    "rshare_mr_import": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_void_p)]),
    "rshare_mr_unimport": (c_int, [c_void_p]),
    "rshare_mr_dereg": (c_int, [c_void_p]),
    "rshare_mr_attrs": (c_int, [c_void_p, POINTER(c_uint64), POINTER(c_uint64),
                                POINTER(c_uint32), POINTER(c_uint32), POINTER(c_uint32)]),
    "rshare_mr_handle": (c_int, [c_void_p, POINTER(c_uint32)]),
    "rshare_mr_native": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_dm_alloc": (c_int, [c_void_p, c_uint64, POINTER(c_void_p)]),
    "rshare_dm_export": (c_int, [c_void_p, c_void_p, c_size_t, _size_p]),
    "rshare_dm_import": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_void_p)]),
    "rshare_dm_unimport": (c_int, [c_void_p]),
    "rshare_dm_free": (c_int, [c_void_p]),
    "rshare_dm_length": (c_int, [c_void_p, POINTER(c_uint64)]),
    "rshare_dm_write": (c_int, [c_void_p, c_uint64, c_void_p, c_size_t]),
    "rshare_dm_read": (c_int, [c_void_p, c_uint64, c_void_p, c_size_t]),
    "rshare_dm_handle": (c_int, [c_void_p, POINTER(c_uint32)]),
    "rshare_dm_native": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_blob_field": (c_int, [c_void_p, c_size_t, c_int, POINTER(c_uint64)]),
    # Since 1.1: the broker.
    "rshare_broker_start": (c_int, [c_char_p, POINTER(c_void_p)]),
    "rshare_broker_stop": (c_int, [c_void_p]),
    "rshare_broker_endpoint": (c_int, [c_void_p, c_char_p, c_size_t, _size_p]),
    "rshare_broker_default_endpoint": (c_int, [c_char_p, c_size_t, _size_p]),
    "rshare_broker_publish": (c_int, [c_char_p, c_char_p, c_void_p, c_void_p, c_size_t,
                                      c_void_p, POINTER(c_void_p)]),
    "rshare_broker_withdraw": (c_int, [c_void_p]),
    "rshare_broker_withdraw_name": (c_int, [c_char_p, c_char_p]),
    "rshare_broker_attach": (c_int, [c_char_p, c_char_p, c_int, POINTER(c_void_p), c_void_p,
                                     c_size_t, _size_p]),
    "rshare_broker_list": (c_int, [c_char_p, c_char_p, c_size_t, _size_p]),
    # Since 1.2.
    "rshare_kind_name": (c_char_p, [c_int]),
    "rshare_provider_name": (c_char_p, [c_int]),
    "rshare_blob_size": (c_int, [c_void_p, c_size_t, _size_p]),
    # Since 1.2: attach from an event loop.
    "rshare_broker_attach_start": (c_int, [c_char_p, c_char_p, POINTER(c_void_p)]),
    "rshare_attach_fd": (c_int, [c_void_p, POINTER(c_int)]),
    "rshare_attach_wait": (c_int, [c_void_p, c_int, c_uint32]),
    "rshare_attach_finish": (c_int, [c_void_p, POINTER(c_void_p), c_void_p, c_size_t, _size_p]),
    "rshare_broker_attach_startv": (c_int, [c_char_p, c_char_p, POINTER(c_void_p)]),
    "rshare_attach_finishv": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_int), c_size_t,
                                      _size_p, c_void_p, c_size_t, _size_p]),
    "rshare_attach_cancel": (c_int, [c_void_p]),
    "rshare_broker_waiting": (c_int, [c_char_p, c_char_p, c_size_t, _size_p]),
    "rshare_buf_alloc": (c_int, [c_void_p, c_size_t, c_uint32, POINTER(c_void_p)]),
    "rshare_buf_export": (c_int, [c_void_p, c_void_p, c_size_t, _size_p]),
    "rshare_buf_fd": (c_int, [c_void_p, POINTER(c_int)]),
    "rshare_buf_import": (c_int, [c_void_p, c_void_p, c_size_t, c_int, POINTER(c_void_p)]),
    "rshare_buf_ptr": (c_int, [c_void_p, POINTER(c_void_p), _size_p]),
    "rshare_buf_mr": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_buf_unimport": (c_int, [c_void_p]),
    "rshare_buf_free": (c_int, [c_void_p]),
    "rshare_channel_sendv": (c_int, [c_int, c_void_p, POINTER(c_int), c_size_t, c_void_p,
                                     c_size_t]),
    "rshare_channel_recvv": (c_int, [c_int, POINTER(c_void_p), POINTER(c_int), c_size_t,
                                     _size_p, c_void_p, c_size_t, _size_p]),
    "rshare_dm_map": (c_int, [c_void_p, POINTER(c_void_p)]),
    "rshare_dm_unmap": (c_int, [c_void_p]),
    "rshare_broker_publishv": (c_int, [c_char_p, c_char_p, c_void_p, POINTER(c_int), c_size_t,
                                       c_void_p, c_size_t, c_void_p, POINTER(c_void_p)]),
    "rshare_broker_attachv": (c_int, [c_char_p, c_char_p, c_int, POINTER(c_void_p),
                                      POINTER(c_int), c_size_t, _size_p, c_void_p, c_size_t,
                                      _size_p]),
}
for _name, (_res, _args) in API.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, _args


class R:
    """rshare_xxx(...) as R.xxx(...), asserting the status when `want` is given."""

    def __getattr__(self, name):
        fn = getattr(lib, "rshare_" + name)

        def call(*args, want=None):
            status = fn(*args)
            if want is not None:
                assert status == want, "rshare_%s: %s, want %s (%s)" % (
                    name, lib.rshare_status_name(status).decode(),
                    lib.rshare_status_name(want).decode(), lib.rshare_last_error().decode())
            return status
        return call


rs = R()


def export(obj, fn):
    buf, n = ctypes.create_string_buffer(BLOB_MAX), c_size_t()
    fn(obj, buf, BLOB_MAX, byref(n), want=OK)
    return buf.raw[:n.value]


def to_text(blob):
    buf, n = ctypes.create_string_buffer(TEXT_MAX), c_size_t()
    rs.blob_to_text(blob, len(blob), buf, TEXT_MAX, byref(n), want=OK)
    return buf.value


def from_text(text):
    buf, n = ctypes.create_string_buffer(BLOB_MAX), c_size_t()
    rs.blob_from_text(text, buf, BLOB_MAX, byref(n), want=OK)
    return buf.raw[:n.value]


def test_declarations_match_the_manifest():
    """What this consumer declares is what the ABI manifest says."""
    manifest = json.loads((Path(__file__).parents[2] / "abi" / "rshare.abi.json").read_text())
    # ctypes spells size_t as the unsigned integer of its width.
    size_t = "uint%d" % (8 * ctypes.sizeof(c_size_t))
    ffi_of = {c_int: "sint", c_uint32: "uint32", c_uint64: "uint64", c_size_t: size_t}
    declared = {name: [ffi_of.get(t, "pointer") for t in [res] + args]
                for name, (res, args) in API.items()}
    want = {f["name"]: [size_t if c == "size_t" else c for c in
                        [f["returns"]["ffi"]] + [p["ffi"] for p in f["params"]]]
            for f in manifest["functions"]}
    assert declared == want
    status = manifest["enums"]["rshare_status"]
    assert (status["RSHARE_E_STALE"], status["RSHARE_E_NOSPACE"]) == (E_STALE, E_NOSPACE)


def test_library_and_statuses():
    assert lib.rshare_version() == b"1.2.0"
    assert lib.rshare_version_number() == 10200
    assert lib.rshare_status_name(E_STALE) == b"RSHARE_E_STALE"
    assert lib.rshare_status_name(12345) == b"RSHARE_E_UNKNOWN"
    assert lib.rshare_strerror(E_NOSPACE)
    rs.device_open(b"sim0", None, want=E_INVAL)
    assert b"rshare_device_open" in lib.rshare_last_error()


def test_misuse_gives_statuses():
    dev, pd = c_void_p(), c_void_p()
    rs.device_open(b"sim0", byref(dev), want=OK)
    rs.pd_alloc(dev, byref(pd), want=OK)
    n = c_size_t(0)
    rs.pd_export(pd, None, 0, byref(n), want=E_NOSPACE)
    assert 0 < n.value <= BLOB_MAX
    name, nlen = ctypes.create_string_buffer(4), c_size_t()
    rs.device_name(dev, name, 4, byref(nlen), want=E_NOSPACE)
    assert nlen.value == 4  # "sim0" needs 5 bytes with the NUL
    rs.device_close(dev, want=E_BUSY)
    rs.pd_free(pd, want=OK)
    rs.pd_free(pd, want=E_STALE)
    rs.pd_handle(None, byref(c_uint32()), want=E_INVAL)
    rs.pd_handle(c_void_p(0x1234), byref(c_uint32()), want=E_STALE)
    rs.device_close(dev, want=OK)
    rs.device_close(dev, want=E_STALE)


def test_scalars_and_caps_of_1_1():
    """The 1.1 scalar accessors through plain ctypes: blob fields instead of
    parsing JSON, the VAR handle, the device's capabilities, and the native
    escape hatch refused on sim0."""
    E_UNSUPPORTED, E_NOT_FOUND_ = -4, -12
    FIELD_KIND, FIELD_HANDLE, FIELD_PAGE_ID, FIELD_MMAP_OFF = 1, 5, 7, 9
    dev, pd, var = c_void_p(), c_void_p(), c_void_p()
    rs.device_open(b"sim0", byref(dev), want=OK)
    caps = c_uint32()
    rs.device_caps(dev, byref(caps), want=OK)
    assert caps.value & 3 == 3  # PD and VAR on sim0
    assert not caps.value & 16  # no native objects
    rs.device_native(dev, byref(c_void_p()), want=E_UNSUPPORTED)
    rs.var_alloc(dev, 0, byref(var), want=OK)
    rs.pd_alloc(dev, byref(pd), want=OK)
    blob, value, handle = export(var, rs.var_export), c_uint64(), c_uint32()
    rs.blob_field(blob, len(blob), FIELD_KIND, byref(value), want=OK)
    assert value.value == KIND_VAR
    rs.var_handle(var, byref(handle), want=OK)
    rs.blob_field(blob, len(blob), FIELD_HANDLE, byref(value), want=OK)
    assert value.value == handle.value
    off = c_uint64()
    rs.var_attrs(var, None, None, byref(off), want=OK)
    rs.blob_field(blob, len(blob), FIELD_MMAP_OFF, byref(value), want=OK)
    assert value.value == off.value
    pd_blob = export(pd, rs.pd_export)
    rs.blob_field(pd_blob, len(pd_blob), FIELD_PAGE_ID, byref(value), want=E_NOT_FOUND_)
    rs.pd_native(pd, byref(c_void_p()), want=E_UNSUPPORTED)
    rs.pd_free(pd, want=OK)
    rs.var_free(var, want=OK)
    rs.device_close(dev, want=OK)


def test_mr_and_dm_through_ctypes():
    """MRs and device memory with nothing but ctypes: a ctypes buffer
    registered, its blob imported into the PD, the keys agree; device memory
    written, then read through an import; a range past the end refused."""
    E_BUSY_, E_INVAL_, E_NOT_FOUND_ = -6, -1, -12
    dev, pd, mr, imp, dm, dm2 = (c_void_p() for _ in range(6))
    rs.device_open(b"sim0", byref(dev), want=OK)
    rs.pd_alloc(dev, byref(pd), want=OK)
    buf = ctypes.create_string_buffer(4096)
    rs.mr_reg(pd, buf, 4096, 1 | 4, byref(mr), want=OK)
    addr, length, lkey, rkey, access = c_uint64(), c_uint64(), c_uint32(), c_uint32(), c_uint32()
    rs.mr_attrs(mr, byref(addr), byref(length), byref(lkey), byref(rkey), byref(access), want=OK)
    assert (addr.value, length.value, access.value) == (ctypes.addressof(buf), 4096, 5)
    blob = export(mr, rs.mr_export)
    rs.mr_import(pd, blob, len(blob), byref(imp), want=OK)
    rkey2 = c_uint32()
    rs.mr_attrs(imp, None, None, None, byref(rkey2), None, want=OK)
    assert rkey2.value == rkey.value
    rs.pd_free(pd, want=E_BUSY_)
    rs.mr_unimport(imp, want=OK)
    rs.mr_dereg(mr, want=OK)
    rs.mr_import(pd, blob, len(blob), byref(imp), want=E_NOT_FOUND_)
    rs.pd_free(pd, want=OK)

    rs.dm_alloc(dev, 256, byref(dm), want=OK)
    rs.dm_write(dm, 16, b"written", 7, want=OK)
    rs.dm_write(dm, 250, b"written", 7, want=E_INVAL_)
    blob = export(dm, rs.dm_export)
    rs.dm_import(dev, blob, len(blob), byref(dm2), want=OK)
    out = ctypes.create_string_buffer(7)
    rs.dm_read(dm2, 16, out, 7, want=OK)
    assert out.raw == b"written"
    rs.dm_unimport(dm2, want=OK)
    rs.dm_free(dm, want=OK)
    rs.device_close(dev, want=OK)


def test_sharing_with_another_process():
    """A child Python process gets the device over the channel and the blobs
    as text, imports both objects, writes the VAR page and frees the PD."""
    dev, pd, var, addr = c_void_p(), c_void_p(), c_void_p(), c_void_p()
    rs.device_open(b"sim0", byref(dev), want=OK)
    prov = c_int()
    rs.device_provider(dev, byref(prov), want=OK)
    assert prov.value == PROVIDER_SIM
    rs.pd_alloc(dev, byref(pd), want=OK)
    rs.var_alloc(dev, 0, byref(var), want=OK)
    pd_blob, var_blob = export(pd, rs.pd_export), export(var, rs.var_export)
    kind = c_int()
    rs.blob_kind(var_blob, len(var_blob), byref(kind), want=OK)
    assert kind.value == KIND_VAR
    desc, dlen = ctypes.create_string_buffer(512), c_size_t()
    rs.blob_describe(pd_blob, len(pd_blob), desc, 512, byref(dlen), want=OK)
    assert json.loads(desc.value)["kind"] == "pd"
    rs.var_map(var, byref(addr), want=OK)
    ctypes.memset(addr, 0, 64)

    texts = to_text(pd_blob) + b" " + to_text(var_blob)
    parent, child = socket.socketpair()
    with parent, child:
        rs.channel_send(parent.fileno(), dev, texts, len(texts), want=OK)
        res = subprocess.run([sys.executable, __file__, "child", str(child.fileno())],
                             pass_fds=(child.fileno(),), capture_output=True, text=True,
                             timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr

    assert ctypes.string_at(addr, 16) == b"written by child"
    rs.pd_free(pd, want=E_NOT_FOUND)  # the child destroyed it
    rs.pd_unimport(pd, want=OK)
    rs.pd_import(dev, pd_blob, len(pd_blob), byref(c_void_p()), want=E_NOT_FOUND)
    rs.var_free(var, want=OK)
    rs.device_close(dev, want=OK)


def child_main(sock):
    dev, pd, var, addr = c_void_p(), c_void_p(), c_void_p(), c_void_p()
    buf, n = ctypes.create_string_buffer(1024), c_size_t()
    rs.channel_recv(sock, byref(dev), buf, 1024, byref(n), want=OK)
    pd_text, var_text = buf.raw[:n.value].split(b" ")
    pd_blob, var_blob = from_text(pd_text), from_text(var_text)
    rs.pd_import(dev, pd_blob, len(pd_blob), byref(pd), want=OK)
    rs.var_import(dev, var_blob, len(var_blob), byref(var), want=OK)
    rs.var_map(var, byref(addr), want=OK)
    ctypes.memmove(addr, b"written by child", 16)
    rs.pd_free(pd, want=OK)
    rs.var_unimport(var, want=OK)
    rs.device_close(dev, want=OK)


if __name__ == "__main__" and sys.argv[1:2] == ["child"]:
    child_main(int(sys.argv[2]))
