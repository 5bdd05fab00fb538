#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Benchmark of the Python bindings (a measurement, not a test).

1. ``dev.import_pd(blob).unimport()`` through the rshare package (SWIG
   -builtin module + the objects' C base type, finalization included)
   against the same two C calls made through cffi's ABI mode (the aim: at
   most 1.0x, issue 10).
2. Sharing a device context plus a payload over a socketpair with
   ``rshare.send/recv`` against doing it by hand with ``socket.send_fds`` /
   ``socket.recv_fds`` and ``Device.from_fd``.

Run from a build tree:
    PYTHONPATH=build/python /usr/bin/python3 tools/bench_python.py [--quick] [--check]
The library for cffi is found next to the package (RSHARE_LIB overrides).
The two sides of each comparison run in alternation, best of each kept, so
both see the same machine load. --check exits 1 if the import ratio misses
its aim (a measurement to run on a quiet machine, never a test).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import rshare

if not hasattr(rshare, "__version__"):  # tools/rshare/ (C sources) seen as a namespace
    sys.exit("the rshare Python package was not found: set PYTHONPATH=<build>/python")

CDEF = """
typedef struct rshare_device rshare_device;
typedef struct rshare_pd rshare_pd;
int rshare_device_open(const char *name, rshare_device **out);
int rshare_device_close(rshare_device *dev);
int rshare_pd_alloc(rshare_device *dev, rshare_pd **out);
int rshare_pd_export(const rshare_pd *pd, void *buf, size_t cap, size_t *len);
int rshare_pd_import(rshare_device *dev, const void *blob, size_t len, rshare_pd **out);
int rshare_pd_unimport(rshare_pd *pd);
int rshare_pd_free(rshare_pd *pd);
"""


IMPORT_AIM = 1.0  # rshare / cffi, at most


def best_ns(fns, iterations: int, repeats: int) -> list:
    """Best per-iteration time in ns of each fn over `repeats` rounds of
    `iterations`, the fns alternating within each round."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter_ns()
            fn(iterations)
            best[i] = min(best[i], (time.perf_counter_ns() - start) / iterations)
    return best


def library_path() -> str:
    if os.environ.get("RSHARE_LIB"):
        return os.environ["RSHARE_LIB"]
    here = os.path.dirname(rshare._rshare.__file__)
    for candidate in (os.path.join(here, "..", "..", "lib", "librshare.so.1"),):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    return "librshare.so.1"  # the installed library, by soname


def bench_import(iterations: int, repeats: int) -> tuple:
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    lib = ffi.dlopen(library_path())

    # cffi: the two C calls, with the out cell and blob buffer made once.
    cdev = ffi.new("rshare_device **")
    assert lib.rshare_device_open(b"sim0", cdev) == 0
    cpd = ffi.new("rshare_pd **")
    assert lib.rshare_pd_alloc(cdev[0], cpd) == 0
    buf = ffi.new("char[128]")
    blen = ffi.new("size_t *")
    assert lib.rshare_pd_export(cpd[0], buf, 128, blen) == 0
    cblob = ffi.from_buffer(ffi.buffer(buf, blen[0])[:])
    out = ffi.new("rshare_pd **")
    dev0 = cdev[0]
    pd_import, pd_unimport = lib.rshare_pd_import, lib.rshare_pd_unimport
    nblob = blen[0]

    def cffi_loop(n):
        for _ in range(n):
            if pd_import(dev0, cblob, nblob, out) != 0:
                raise RuntimeError("import failed")
            if pd_unimport(out[0]) != 0:
                raise RuntimeError("unimport failed")

    # rshare: the public API, Python objects included.
    dev = rshare.open("sim0")
    pd = dev.alloc_pd()
    blob = pd.export()

    def rshare_loop(n):
        for _ in range(n):
            dev.import_pd(blob).unimport()

    t_rshare, t_cffi = best_ns([rshare_loop, cffi_loop], iterations, repeats)
    pd.free()
    dev.close()
    lib.rshare_pd_free(cpd[0])
    lib.rshare_device_close(dev0)
    return t_rshare, t_cffi


def bench_channel(iterations: int, repeats: int) -> tuple:
    dev = rshare.open("sim0")
    payload = dev.alloc_pd().export()
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

    def rshare_loop(n):
        for _ in range(n):
            rshare.send(a, dev, payload)
            got, data = rshare.recv(b)
            got.close()

    def by_hand_loop(n):
        # What a user would write without rshare.send/recv: send the fd and
        # the payload with a length prefix, receive, import, close the fd.
        for _ in range(n):
            socket.send_fds(a, [len(payload).to_bytes(4, "little") + payload], [dev.fd])
            msg, fds, _, _ = socket.recv_fds(b, 4 + rshare.PAYLOAD_MAX, 1)
            size = int.from_bytes(msg[:4], "little")
            data = msg[4:4 + size]
            got = rshare.Device.from_fd(fds[0])
            os.close(fds[0])
            got.close()
            if data != payload:
                raise RuntimeError("payload mismatch")

    t_rshare, t_hand = best_ns([rshare_loop, by_hand_loop], iterations, repeats)
    a.close()
    b.close()
    return t_rshare, t_hand


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few iterations (a smoke run)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if import_pd+unimport is above {IMPORT_AIM}x cffi")
    args = parser.parse_args()
    iterations, repeats = (200, 2) if args.quick else (100_000, 7)

    t_rshare, t_cffi = bench_import(iterations, repeats)
    import_ratio = t_rshare / t_cffi
    print(f"import_pd+unimport  rshare (objects + finalizers)    {t_rshare:8.0f} ns")
    print(f"                    cffi ABI mode (2 C calls)        {t_cffi:8.0f} ns")
    print(f"                    ratio {import_ratio:.2f}x (aim <= {IMPORT_AIM}x)")

    iterations = max(iterations // 20, 50)
    t_rshare, t_hand = bench_channel(iterations, repeats)
    print(f"share over socket   rshare.send/recv                 {t_rshare:8.0f} ns")
    print(f"                    socket.send_fds by hand          {t_hand:8.0f} ns")
    print(f"                    ratio {t_rshare / t_hand:.2f}x (goal < 1x)")
    if args.check and import_ratio > IMPORT_AIM:
        print(f"bench_python: import ratio {import_ratio:.2f}x misses the aim "
              f"({IMPORT_AIM}x)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
