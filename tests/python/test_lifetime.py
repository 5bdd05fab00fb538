# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Lifetimes: nothing a Python program does, in any order, may crash the
interpreter, leave a dangling memoryview or destroy a shared object
implicitly."""

import gc
import multiprocessing.reduction as mp_reduction
import pickle
import random
import copy

import pytest

import rshare
from conftest import run_worker


def test_gc_of_an_allocated_pd_only_unimports(dev):
    pd = dev.alloc_pd()
    blob = pd.export()
    del pd
    gc.collect()
    # Still alive for everyone else: a finalizer never destroys shared objects.
    again = dev.import_pd(blob)
    assert again.handle == rshare.inspect(blob)["handle"]
    again.free()


def test_gc_releases_handles_so_the_device_can_close(dev):
    for _ in range(3):
        dev.alloc_pd()  # dropped at once: unimported by the finalizer
        dev.alloc_var().map()
    gc.collect()
    dev.close()  # no Busy: every handle was released
    assert dev.closed


def test_object_keeps_its_device_alive():
    pd = rshare.open("sim0").alloc_pd()  # no other reference to the Device
    gc.collect()
    assert pd.device.name == "sim0"
    assert pd.handle >= 0
    blob = pd.export()
    pd.device.import_pd(blob).unimport()
    pd.free()


def test_memoryview_raises_after_unmap(dev):
    var = dev.alloc_var()
    mv = var.map()
    mv[0] = 7
    var.unmap()
    with pytest.raises(ValueError):
        mv[0]
    with pytest.raises(ValueError):
        mv[0] = 1
    var.free()


@pytest.mark.parametrize("release", ["unimport", "free", "gc"])
def test_memoryview_raises_after_release(dev, release):
    var = dev.alloc_var()
    mv = var.map()
    mv[0:4] = b"abcd"
    if release == "gc":
        blob = var.export()
        del var
        gc.collect()
    else:
        getattr(var, release)()
    with pytest.raises(ValueError):
        bytes(mv)
    with pytest.raises(ValueError):
        mv[1] = 0
    if release == "gc":
        dev.import_var(blob).free()


def test_derived_views_stay_valid_memory(dev):
    var = dev.alloc_var()
    mv = var.map()
    words = mv.cast("Q")  # a derived view holds the mapping itself
    part = mv[8:16]
    words[0] = 0x1122334455667788
    var.free()
    with pytest.raises(ValueError):
        mv[0]
    # Still mapped memory, never a dangling pointer: reads and writes work.
    assert words[0] == 0x1122334455667788
    part[0] = 9
    assert words[1] & 0xFF == 9
    del words, part
    gc.collect()


def test_map_after_release_raises(dev):
    var = dev.alloc_var()
    var.free()
    with pytest.raises(rshare.StaleHandleError):
        var.map()
    with pytest.raises(rshare.StaleHandleError):
        var.unmap()
    with pytest.raises(rshare.StaleHandleError):
        var.unimport()
    assert "released" in repr(var)


def test_pd_and_var_refuse_to_pickle(dev):
    with dev.alloc_pd() as pd, dev.alloc_var() as var:
        for obj, kind in ((pd, "pd"), (var, "var")):
            with pytest.raises(TypeError, match=rf"export\(\).*import_{kind}"):
                pickle.dumps(obj)
            with pytest.raises(TypeError):
                mp_reduction.ForkingPickler.dumps(obj)
            with pytest.raises(TypeError):
                copy.copy(obj)


def test_device_refuses_plain_pickle(dev):
    with pytest.raises(TypeError, match="multiprocessing"):
        pickle.dumps(dev)


def test_device_pickles_through_multiprocessing_in_process(dev):
    # ForkingPickler duplicates the fd (here: through the resource sharer).
    data = mp_reduction.ForkingPickler.dumps(dev)
    twin = pickle.loads(data)
    with twin:
        assert isinstance(twin, rshare.Device)
        assert twin.fd != dev.fd and twin.guid == dev.guid
        with dev.alloc_pd() as pd, twin.import_pd(pd.export()) as imported:
            assert imported.handle == pd.handle


def test_finalizers_at_interpreter_exit():
    out = run_worker("exit_with_live_objects")
    assert out[-1].startswith("ok ")


def test_repr_never_raises(dev):
    pd = dev.alloc_pd()
    var = dev.alloc_var()
    var.map()
    assert "allocated on sim0" in repr(pd)
    assert "mapped" in repr(var)
    imported = dev.import_pd(pd.export())
    pd.free()
    # Destroyed by its owner, still a live local handle until unimported.
    assert repr(imported) == f"<rshare.PD handle={imported.handle} imported on sim0>"
    imported.unimport()
    var.free()
    dev.close()
    assert "on a closed device" in repr(pd) and "released" in repr(pd)
    assert repr(dev) == "<rshare.Device closed>"


def test_any_call_order_is_safe():
    """Random sequences of every operation: each call either works or
    raises an rshare.Error; the interpreter never crashes."""
    rng = random.Random(1234)
    devices = [rshare.open("sim0")]
    objects, views, blobs = [], [], []

    def pick(seq):
        return rng.choice(seq) if seq else None

    def op():
        choice = rng.randrange(16)
        d, o = pick(devices), pick(objects)
        if choice == 0:
            devices.append(rshare.Device.from_fd(d.fd))
        elif choice == 1:
            objects.append(d.alloc_pd())
        elif choice == 2:
            objects.append(d.alloc_var())
        elif choice == 3 and blobs:
            blob = pick(blobs)
            objects.append(d.import_pd(blob) if rshare.kind(blob) == "pd" else d.import_var(blob))
        elif choice == 4 and o:
            blobs.append(o.export())
        elif choice == 5 and o:
            o.free()
        elif choice == 6 and o:
            o.unimport()
        elif choice == 7 and isinstance(o, rshare.Var):
            views.append(o.map())
        elif choice == 8 and isinstance(o, rshare.Var):
            o.unmap()
        elif choice == 9 and views:
            v = pick(views)
            v[rng.randrange(len(v))] = rng.randrange(256)
        elif choice == 10:
            d.close()
        elif choice == 11 and objects:
            objects.remove(o)
            gc.collect()
        elif choice == 12 and o:
            repr(o), repr(d), o.handle
        elif choice == 13 and o:
            with o:
                pass
        elif choice == 14 and len(devices) > 1:
            devices.remove(d)
            gc.collect()
        elif choice == 15 and blobs:
            blob = bytearray(pick(blobs))
            blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
            d.import_pd(bytes(blob))

    outcomes = {"ok": 0, "error": 0, "released_view": 0}
    for _ in range(3000):
        try:
            op()
            outcomes["ok"] += 1
        except rshare.Error:
            outcomes["error"] += 1
        except ValueError:  # a released memoryview
            outcomes["released_view"] += 1
    assert outcomes["ok"] > 500 and outcomes["error"] > 100, outcomes
    del objects, views, devices
    gc.collect()


def test_generic_import_and_wrap_check_the_owner(dev):
    """The C base types' generic entry points (what new kinds build on):
    each kind lives in its owner (PD, VAR, DM in a Device; an MR in a PD)."""
    C = rshare._rshare
    with dev.alloc_pd() as pd:
        blob = pd.export()
        with dev._import(C.RSHARE_KIND_PD, blob) as again:
            assert isinstance(again, rshare.PD) and again.imported
            assert again.handle == pd.handle and again.device is dev
        with pytest.raises(TypeError, match="mr objects are not imported into"):
            dev._import(C.RSHARE_KIND_MR, blob)  # MRs live in a PD
        with pytest.raises(TypeError, match="pd objects are not imported into"):
            pd._import(C.RSHARE_KIND_PD, blob)
        with pytest.raises(ValueError, match="unknown rshare kind"):
            dev._import(99, blob)
        handle = C.pd_import(dev, blob)
        with pytest.raises(TypeError, match="owner of a var must be a Device"):
            C._wrap(C.RSHARE_KIND_VAR, pd, handle, True)
        with pytest.raises(TypeError, match="owner of a mr must be a PD"):
            C._wrap(C.RSHARE_KIND_MR, dev, handle, True)
        # A refused wrap released nothing it did not own: the raw handle is
        # still the caller's to release.
        C.pd_unimport(handle)
