# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Unit tests of every public call, on the simulated device."""

import json
import os
import socket
import tempfile

import pytest

import rshare
from conftest import run_worker

C = rshare._rshare


def test_version_comes_from_the_c_library():
    assert rshare.__version__ == C.version() == "1.2.0"
    major, minor, patch = map(int, rshare.__version__.split("."))
    assert (major, minor, patch) == (C.RSHARE_VERSION_MAJOR, C.RSHARE_VERSION_MINOR,
                                     C.RSHARE_VERSION_PATCH)


def test_devices_lists_sim0_last():
    found = rshare.devices()
    assert found, "sim0 must be listed"
    sim = found[-1]
    assert isinstance(sim, rshare.DeviceInfo)
    assert (sim.name, sim.provider) == ("sim0", "sim")
    assert isinstance(sim.guid, int) and sim.guid != 0
    assert all(d.provider == "hw" for d in found[:-1])


def test_devices_hides_sim0_with_rshare_sim_0():
    lines = run_worker("devices", env_extra={"RSHARE_SIM": "0"})
    assert all(entry[2] != "sim" for entry in json.loads(lines[-1]))


def test_open_default_and_attributes():
    with rshare.open() as dev:  # no hardware here: the default is sim0
        assert dev.name == "sim0"
        assert dev.provider == "sim"
        assert dev.guid == rshare.devices()[-1].guid
        assert dev.fd >= 0 and os.fstat(dev.fd)
        assert not dev.closed
        assert "sim0" in repr(dev) and f"fd={dev.fd}" in repr(dev)
    assert dev.closed
    assert repr(dev) == "<rshare.Device closed>"


def test_open_unknown_device_raises_no_device():
    with pytest.raises(rshare.NoDevice) as info:
        rshare.open("no-such-device")
    assert info.value.code == C.RSHARE_E_NODEV
    assert str(info.value).startswith("rshare_device_open")


def test_device_close_twice_raises_stale(dev):
    dev.close()
    with pytest.raises(rshare.StaleHandleError):
        dev.close()
    for attr in ("fd", "name", "guid", "provider"):
        with pytest.raises(rshare.StaleHandleError):
            getattr(dev, attr)
    with pytest.raises(rshare.StaleHandleError):
        dev.alloc_pd()


def test_device_close_busy_while_objects_live(dev):
    pd = dev.alloc_pd()
    with pytest.raises(rshare.Busy) as info:
        dev.close()
    assert info.value.name == "RSHARE_E_BUSY"
    assert not dev.closed and dev.name == "sim0"  # still open
    pd.free()
    dev.close()
    assert dev.closed


def test_device_from_fd_duplicates(dev):
    with rshare.Device.from_fd(dev.fd) as twin:
        assert twin.fd != dev.fd
        assert (twin.name, twin.guid, twin.provider) == (dev.name, dev.guid, dev.provider)
    os.fstat(dev.fd)  # closing the twin left the original fd open


def test_device_from_fd_refuses_other_fds():
    with tempfile.TemporaryFile() as f:
        with pytest.raises(rshare.NoDevice):
            rshare.Device.from_fd(f.fileno())
    with pytest.raises(rshare.InvalidArgument):
        rshare.Device.from_fd(-1)


def test_classes_are_not_constructed_directly():
    for cls in (rshare.Device, rshare.PD, rshare.Var):
        with pytest.raises(TypeError):
            cls()


def test_pd_alloc_export_import(dev):
    pd = dev.alloc_pd()
    assert pd.imported is False and pd.live and pd.device is dev
    blob = pd.export()
    assert isinstance(blob, bytes) and 0 < len(blob) <= rshare.BLOB_MAX
    pd2 = dev.import_pd(blob)
    assert pd2.imported is True
    assert pd2.handle == pd.handle
    pd3 = dev.import_pd(bytearray(blob))       # any bytes-like object
    pd4 = dev.import_pd(rshare.to_text(blob))  # the text form
    assert pd3.handle == pd4.handle == pd.handle
    for p in (pd2, pd3, pd4):
        p.unimport()
        assert not p.live
    assert "released" in repr(pd2)
    assert f"handle={pd.handle} allocated on sim0" in repr(pd)
    pd.free()
    with pytest.raises(rshare.StaleHandleError):
        pd.free()
    with pytest.raises(rshare.StaleHandleError):
        pd2.unimport()
    with pytest.raises(rshare.StaleHandleError):
        pd.export()
    with pytest.raises(rshare.NotFound):
        dev.import_pd(blob)


def test_pd_free_through_other_handle_then_unimport(dev):
    pd = dev.alloc_pd()
    imported = dev.import_pd(pd.export())
    pd.free()
    with pytest.raises(rshare.NotFound):
        imported.free()  # already destroyed: the handle stays live...
    assert imported.live
    imported.unimport()  # ...and is released locally
    assert not imported.live


def test_pd_context_manager_frees_allocated_and_unimports_imported(dev):
    with dev.alloc_pd() as pd:
        blob = pd.export()
        with dev.import_pd(blob) as imported:
            assert imported.handle == pd.handle
        assert not imported.live
        dev.import_pd(blob).unimport()  # the PD outlived the import's exit
    assert not pd.live
    with pytest.raises(rshare.NotFound):
        dev.import_pd(blob)  # the allocated one was freed on exit


def test_context_manager_after_explicit_release_is_quiet(dev):
    with dev.alloc_pd() as pd:
        pd.free()
    with rshare.open("sim0") as other:
        other.close()


def test_var_alloc_attrs_export_import(dev):
    var = dev.alloc_var()
    page_id, length, mmap_off = var.attrs()
    assert (var.page_id, var.length, var.mmap_off) == (page_id, length, mmap_off)
    assert length == 4096 and mmap_off % 4096 == 0
    assert var.imported is False
    blob = var.export()
    info = rshare.inspect(blob)
    assert info["kind"] == "var" and info["page_id"] == page_id
    assert info["length"] == length and info["mmap_off"] == mmap_off
    assert var.handle == info["handle"]
    with dev.import_var(blob) as var2:
        assert var2.imported and var2.attrs() == var.attrs() and var2.handle == var.handle
    with dev.import_var(rshare.to_text(blob)) as var3:
        assert var3.page_id == page_id
    other = dev.alloc_var(flags=rshare.VAR_FLAG_TLP)
    assert other.page_id != page_id
    other.free()
    var.free()
    with pytest.raises(rshare.StaleHandleError):
        var.attrs()


def test_var_bad_flags(dev):
    with pytest.raises(rshare.InvalidArgument):
        dev.alloc_var(flags=0x80)


def test_var_pages_run_out(dev):
    vars_ = []
    with pytest.raises(rshare.OutOfMemory) as info:
        for _ in range(10_000):
            vars_.append(dev.alloc_var())
    assert isinstance(info.value, MemoryError)
    assert len(vars_) == 64  # sim0's page count
    vars_.pop().free()
    vars_.append(dev.alloc_var())  # a freed page is reusable
    for v in vars_:
        v.free()


def test_var_map_is_shared_and_writable(dev):
    var = dev.alloc_var()
    mv = var.map()
    assert mv is var.map()  # the same view until unmap()
    assert len(mv) == var.length and not mv.readonly and var.mapped
    with dev.import_var(var.export()) as var2:
        mv2 = var2.map()
        mv[100:104] = b"ping"
        assert bytes(mv2[100:104]) == b"ping"
        mv2[0:8] = (12345).to_bytes(8, "little")
        assert int.from_bytes(mv[0:8], "little") == 12345
    var.unmap()
    assert not var.mapped
    var.unmap()  # a no-op when not mapped
    assert bytes(var.map()[100:104]) == b"ping"  # the page kept its content
    var.free()


def test_kinds_are_checked(dev):
    with dev.alloc_pd() as pd, dev.alloc_var() as var:
        assert rshare.kind(pd.export()) == "pd" and rshare.kind(var.export()) == "var"
        with pytest.raises(rshare.BlobKind) as info:
            dev.import_var(pd.export())
        assert isinstance(info.value, rshare.BlobError)
        with pytest.raises(rshare.BlobKind):
            dev.import_pd(var.export())


def test_inspect_to_text_from_text(dev):
    with dev.alloc_pd() as pd:
        blob = pd.export()
        info = rshare.inspect(blob)
        assert info["kind"] == "pd" and info["provider"] == "sim"
        assert int(info["guid"], 16) == dev.guid
        assert info["handle"] == pd.handle
        text = rshare.to_text(blob)
        assert text.startswith("rshare:") and "=" not in text
        assert rshare.from_text(text) == blob
        assert rshare.inspect(text) == info
    with pytest.raises(rshare.InvalidArgument):
        rshare.from_text("not-a-blob")
    with pytest.raises(TypeError):
        rshare.from_text(blob)
    with pytest.raises(rshare.BlobCorrupt):
        rshare.inspect(b"RSHB" + bytes(60))


def test_names_and_framing_come_from_the_library(dev):
    c = rshare._rshare
    for name in ("pd", "var", "mr", "dm"):
        assert c.kind_name(getattr(c, "RSHARE_KIND_" + name.upper())) == name
    assert c.kind_name(0) is None and c.kind_name(99) is None
    assert c.provider_name(c.RSHARE_PROVIDER_SIM) == "sim" and c.provider_name(9) is None
    with dev.alloc_pd() as pd, dev.alloc_var() as var:
        blobs = [pd.export(), var.export()]
        payload = b"".join(blobs)
        assert c.blob_size(payload) == len(blobs[0])
        assert c.blob_size(memoryview(payload)[len(blobs[0]):]) == len(blobs[1])
        assert rshare._broker.split_blobs(payload) == blobs
        assert rshare._broker.split_blobs(payload[:-1]) is None
        with pytest.raises(rshare.BlobCorrupt, match="more than are left"):
            c.blob_size(blobs[1][:-1])
        objects = rshare._blob.import_all(dev, blobs)
        assert [o.handle for o in objects["pd"]] == [pd.handle]
        assert [o.attrs() for o in objects["var"]] == [var.attrs()]
        for obj in objects["var"] + objects["pd"]:
            obj.unimport()


def test_blob_version_newer_than_library(dev):
    with dev.alloc_pd() as pd:
        blob = bytearray(pd.export())
        blob[4] += 1  # the format byte
        with pytest.raises(rshare.BlobVersion) as info:
            dev.import_pd(bytes(blob))
        assert info.value.code == C.RSHARE_E_BLOB_VERSION
        assert isinstance(info.value, rshare.BlobError)


def test_send_recv_with_socket_objects_and_fds(dev):
    a, b = socket.socketpair()
    with a, b:
        rshare.send(a, dev, b"hello")
        got, payload = rshare.recv(b.fileno())
        with got:
            assert payload == b"hello" and got.guid == dev.guid and got.fd != dev.fd
        rshare.send(a.fileno(), dev)
        got, payload = rshare.recv(b)
        got.close()
        assert payload == b""
        big = os.urandom(rshare.PAYLOAD_MAX)
        rshare.send(a, dev, big)
        got, payload = rshare.recv(b)
        got.close()
        assert payload == big
        with pytest.raises(TypeError):
            rshare.send(a, "not a device")
        with pytest.raises(TypeError):
            rshare.recv("not a socket")


def test_send_oversized_payload_is_invalid(dev):
    a, b = socket.socketpair()
    with a, b:
        with pytest.raises(rshare.InvalidArgument):
            rshare.send(a, dev, bytes(rshare.PAYLOAD_MAX + 1))


def test_recv_of_a_foreign_message_is_a_protocol_error():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"this is not an rshare message at all........")
        with pytest.raises(rshare.ProtocolError) as info:
            rshare.recv(b)
        assert info.value.name == "RSHARE_E_PROTOCOL"


def test_recv_after_peer_closed_is_a_system_call_error():
    a, b = socket.socketpair()
    a.close()
    with b:
        with pytest.raises(rshare.SystemCallError) as info:
            rshare.recv(b)
        assert isinstance(info.value, OSError)


def test_recv_releases_the_gil(dev):
    # A blocked recv() must not stop other Python threads.
    import threading
    a, b = socket.socketpair()
    with a, b:
        result = {}
        thread = threading.Thread(target=lambda: result.update(got=rshare.recv(b)))
        thread.start()
        thread.join(0.2)
        assert thread.is_alive()  # blocked in recv, and we are still running
        rshare.send(a, dev, b"late")
        thread.join(10)
        got, payload = result["got"]
        got.close()
        assert payload == b"late"


def test_last_error_is_the_message(dev):
    with pytest.raises(rshare.Error) as info:
        dev.import_pd(b"x")
    assert rshare.last_error() == str(info.value)
    assert str(info.value).startswith("rshare_pd_import")


def test_every_public_name_is_documented():
    missing = []
    for name in rshare.__all__:
        obj = getattr(rshare, name)
        if callable(obj) and not (obj.__doc__ or "").strip():
            missing.append(name)
    for cls in (rshare.Device, rshare.PD, rshare.Var):
        for attr in dir(cls):
            if not attr.startswith("_") and not (getattr(cls, attr).__doc__ or "").strip():
                missing.append(f"{cls.__name__}.{attr}")
    assert not missing


def test_type_stub_matches_the_compiled_module():
    stub_path = os.path.join(os.path.dirname(rshare.__file__), "_rshare.pyi")
    with open(stub_path) as f:
        stub = f.read()
    names = [n for n in dir(C) if not n.startswith("__")]
    assert [n for n in names if f"def {n}(" not in stub and f"{n}: int" not in stub
            and f"class {n}:" not in stub and f"class {n}(" not in stub] == []
    assert os.path.exists(os.path.join(os.path.dirname(rshare.__file__), "py.typed"))
