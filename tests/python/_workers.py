# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Worker code for the cross-process tests.

Importable (multiprocessing pickles these functions by name) and runnable
as a script (`python3 _workers.py COMMAND ...`) for the tests that start
workers with subprocess. Every worker checks what it imported against what
the parent expects, writes its id into its slot of the shared VAR page and
reports what it saw.
"""

import json
import os
import socket
import sys

import rshare

SLOT_SIZE = 8


def write_slot(mv, slot, value):
    mv[slot * SLOT_SIZE:(slot + 1) * SLOT_SIZE] = value.to_bytes(SLOT_SIZE, "little")


def read_slot(mv, slot):
    return int.from_bytes(mv[slot * SLOT_SIZE:(slot + 1) * SLOT_SIZE], "little")


def expectation(dev, pd, var):
    """What a worker must find after importing pd and var (JSON-able)."""
    return {"guid": dev.guid, "provider": dev.provider, "name": dev.name,
            "pd_handle": pd.handle, "var_handle": var.handle,
            "var_attrs": list(var.attrs())}


def check_and_write(dev, pd_blob, var_blob, expect, slot):
    """Import the PD and VAR, check them, write our pid into `slot`, release.

    Returns a dict the parent asserts on (raises AssertionError on any
    mismatch, which fails the parent's test through the exit code or the
    pool's re-raised exception)."""
    assert dev.provider == expect["provider"], (dev.provider, expect)
    assert dev.guid == expect["guid"], (dev.guid, expect)
    assert dev.name == expect["name"]
    pd = dev.import_pd(pd_blob)
    var = dev.import_var(var_blob)
    assert pd.imported and var.imported
    assert pd.handle == expect["pd_handle"], (pd.handle, expect)
    assert var.handle == expect["var_handle"], (var.handle, expect)
    assert list(var.attrs()) == expect["var_attrs"], (var.attrs(), expect)
    assert (var.page_id, var.length, var.mmap_off) == tuple(expect["var_attrs"])
    mv = var.map()
    assert len(mv) == var.length
    write_slot(mv, slot, os.getpid())
    var.unmap()
    var.unimport()
    pd.unimport()
    return {"pid": os.getpid(), "slot": slot, "pd_handle": expect["pd_handle"]}


def pool_work(args):
    """Pool.map entry: args = (dev, pd_blob, var_blob, expect, slot)."""
    return check_and_write(*args)


def process_work(dev, pd_blob, var_blob, expect, slot, queue):
    """Process entry: report the result (or the failure text) on queue."""
    try:
        queue.put(check_and_write(dev, pd_blob, var_blob, expect, slot))
    except BaseException as exc:  # report, do not hang the parent
        queue.put({"error": f"{type(exc).__name__}: {exc}"})


def hold_across_free(dev, pd_blob, conn):
    """Import the PD, wait while the parent frees it, then check that a new
    import says NotFound and that releasing the earlier import still works."""
    result = {}
    try:
        earlier = dev.import_pd(pd_blob)
        conn.send("imported")
        assert conn.recv() == "freed"
        try:
            dev.import_pd(pd_blob)
            result["reimport"] = "succeeded"
        except rshare.NotFound as exc:
            result["reimport"] = exc.name
            result["message"] = str(exc)
        earlier.unimport()
        result["unimport"] = "ok"
        try:
            earlier.unimport()
        except rshare.StaleHandleError as exc:
            result["second_unimport"] = exc.name
    except BaseException as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    conn.send(result)


def hammer(dev, pd_blob, var_blob, conn):
    """Map the VAR, write a marker, then import/unimport the PD until killed
    (so the kill can land while this process holds the table's lock)."""
    var = dev.import_var(var_blob)
    write_slot(var.map(), 0, 0xDEAD)
    conn.send("running")
    while True:
        dev.import_pd(pd_blob).unimport()


# ---- script commands (subprocess workers) -----------------------------------
def cmd_passfd(fd, pd_text, var_text, expect_json, slot):
    """The device arrives by pass_fds; the blobs as text on the command line."""
    dev = rshare.Device.from_fd(int(fd))
    os.close(int(fd))  # from_fd duplicated it
    print(json.dumps(check_and_write(dev, pd_text, var_text, json.loads(expect_json), int(slot))))
    dev.close()


def cmd_socket(fd, slot):
    """The device and the blobs arrive in one rshare.send() message; the
    worker answers with its own rshare.send() of the device it received."""
    sock = socket.socket(fileno=int(fd))
    dev, payload = rshare.recv(sock)
    msg = json.loads(payload)
    result = check_and_write(dev, bytes.fromhex(msg["pd"]), bytes.fromhex(msg["var"]),
                             msg["expect"], int(slot))
    rshare.send(sock, dev, json.dumps(result).encode())
    dev.close()
    print(json.dumps(result))


def cmd_env(fd, slot):
    """The blobs arrive as text in environment variables."""
    dev = rshare.Device.from_fd(int(fd))
    expect = json.loads(os.environ["RSHARE_TEST_EXPECT"])
    result = check_and_write(dev, os.environ["RSHARE_TEST_PD"], os.environ["RSHARE_TEST_VAR"],
                             expect, int(slot))
    print(json.dumps(result))


def cmd_exit_with_live_objects():
    """Leave devices, objects, mappings and a reference cycle alive at
    interpreter exit: the finalizers must not crash or raise."""
    dev = rshare.open("sim0")
    pd = dev.alloc_pd()
    var = dev.alloc_var()
    mv = var.map()
    mv[0] = 1
    imported = dev.import_pd(pd.export())
    cycle = [dev, pd, var, imported, mv]
    cycle.append(cycle)
    global KEEP
    KEEP = (dev, pd, var, mv)
    print("ok", imported.handle)


def cmd_describe_devices():
    print(json.dumps([list(d) for d in rshare.devices()]))


COMMANDS = {
    "passfd": cmd_passfd,
    "socket": cmd_socket,
    "env": cmd_env,
    "exit_with_live_objects": cmd_exit_with_live_objects,
    "devices": cmd_describe_devices,
}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])


def readme_worker(dev, blob, queue):
    """The README's worker pattern, reporting what it saw."""
    try:
        with dev, dev.import_pd(blob) as pd:
            handle = pd.handle
        queue.put({"handle": handle, "closed": dev.closed})
    except BaseException as exc:
        queue.put({"error": f"{type(exc).__name__}: {exc}"})
        raise


def buffer_child(sock, first):
    """Receive a device, a PD and a shared Buffer (blob + memory fd) over the
    rshare channel, check the parent's numbers through a zero-copy numpy
    view, write our own after them and report what we saw (JSON)."""
    import numpy as np

    dev, objs = rshare.recv_objects(sock)
    pd, buf = objs["pd"][0], objs["buf"][0]
    view = np.frombuffer(buf, dtype=np.uint64)
    report = {
        "same_address": view.ctypes.data == buf.ptr,
        "dlpack_address": np.from_dlpack(buf).ctypes.data == buf.ptr,
        "saw_parent": bool((view[:first] == np.arange(first, dtype=np.uint64)).all()),
        "ptr": buf.ptr, "pid": os.getpid(),
        "attrs": list(buf.attrs())[:4], "imported": buf.imported,
    }
    view[first:] = os.getpid()
    try:
        buf.unimport()
        report["unimport_with_view"] = "allowed"
    except BufferError:
        report["unimport_with_view"] = "refused"
    del view
    buf.unimport()
    pd.unimport()
    dev.close()
    sock.sendall(json.dumps(report).encode() + b"\n")
    sock.close()
