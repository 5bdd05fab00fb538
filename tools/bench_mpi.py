# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Registered memory for a node of an MPI job: one shared buffer against a
buffer per rank, side by side (time, registrations, memory).

    mpirun -np 4 --oversubscribe /usr/bin/python3 tools/bench_mpi.py [--mib 256] [--check]

(PYTHONPATH=build/python; as root add --allow-run-as-root.) Both modes
start with rshare.mpi.node_share() (one context and PD per node):

  shared     node_share(buffer=...): the node's owner allocates the buffer
             (--mib MiB) and registers it once; every other rank maps the
             same memory and imports the registration (the same keys);
  per rank   every rank allocates and registers its own --mib MiB buffer
             (PD.alloc_buffer), as programs do without sharing.

The allocating rank writes every byte (the pages come into being; a
registration on real hardware pins them), then every rank reads a byte of
each page of its view. Rows: registrations made on the node; bytes
registered (what hardware pins: ibv_reg_mr pins each registration's pages);
resident memory, the sum over the node's ranks of the growth, from
node_share's return on, of the proportional set size of their buffer
mappings (rshare's memfds; Pss splits a page shared by k processes k ways,
so shared pages count once for the node). The rest of a process is left
out: a shared library's Pss moves whenever any other process on the
machine starts or exits, and a sanitizer's shadow and quarantine grow with
every allocation, each by more than the check's 10% at 32 MiB; setup
time, from a barrier
before node_share until every rank holds a usable, registered view.
--check exits 1 unless the shared mode made 1 registration and the node
holds about 1x the buffer against about N x per rank.
"""

import argparse
import json
import mmap
import sys
import time

from mpi4py import MPI

import rshare
import rshare.mpi

PAGE = mmap.PAGESIZE
CHUNK = b"\x01" * (1 << 20)


BUFFER_MAPPING = "/memfd:rshare-buf"  # how smaps names a shared buffer's pages


def pss_kib() -> int:
    """Pss of this process's buffer mappings (module docstring)."""
    total, counted, seen = 0, False, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's header
                counted = len(head) > 5 and head[5].startswith(BUFFER_MAPPING)
            elif line.startswith("Pss:"):
                seen = True
                if counted:
                    total += int(line.split()[1])
    if not seen:
        raise RuntimeError("no Pss in /proc/self/smaps")
    return total


def fill(buf: rshare.Buffer) -> None:
    """Write every byte (the allocating rank: the pages come into being)."""
    with memoryview(buf) as view:
        for off in range(0, len(view), len(CHUNK)):
            n = min(len(CHUNK), len(view) - off)
            view[off:off + n] = CHUNK[:n]


def touch(buf: rshare.Buffer) -> int:
    """Read one byte of every page: each page is mapped in this process."""
    with memoryview(buf) as view:
        return sum(view[::PAGE])


def shared_mode(comm, nbytes, device, mark):
    """The owner allocates and registers once; the others map and import."""
    share = rshare.mpi.node_share(comm, buffer=nbytes, device=device)
    mark()
    if share.owner:
        fill(share.buffer)
    share.node_comm.Barrier()
    touch(share.buffer)
    return share, share.buffer, int(share.owner)


def per_rank_mode(comm, nbytes, device, mark):
    """Every rank allocates and registers its own buffer."""
    share = rshare.mpi.node_share(comm, device=device)
    mark()
    buf = share.pd.alloc_buffer(nbytes)
    fill(buf)
    touch(buf)
    return share, buf, 1


def measure(comm, mode, nbytes, device):
    before = []  # Pss once node_share is done: its own memory is not the buffer's
    comm.Barrier()
    start = time.perf_counter()
    share, buf, regs = mode(comm, nbytes, device, lambda: before.append(pss_kib()))
    comm.Barrier()
    took = time.perf_counter() - start
    grown = (pss_kib() - before[0]) * 1024
    node = share.node_comm
    row = {
        "ranks": node.Get_size(),
        "registrations": node.allreduce(regs),
        "registered": node.allreduce(regs * nbytes),
        "resident": node.allreduce(grown),
        "seconds": node.allreduce(took, op=MPI.MAX),
    }
    if buf is not share.buffer:
        buf.free()
    share.close()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="buffer size in MiB (default 256)")
    ap.add_argument("--device", default=None, help="device name (default: the first)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless shared is 1 registration and ~1x memory against ~N x")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    nbytes = args.mib << 20
    comm = MPI.COMM_WORLD
    rows = {"shared": measure(comm, shared_mode, nbytes, args.device),
            "per rank": measure(comm, per_rank_mode, nbytes, args.device)}
    ranks = rows["shared"]["ranks"]
    dev = args.device or rshare.devices()[0].name
    if comm.Get_rank() != 0:
        return 0
    if args.json:
        print(json.dumps({"ranks": ranks, "device": dev, "bytes": nbytes, "rows": rows}))
    else:
        print(f"rshare MPI bench: {ranks} ranks on one node, device {dev}, "
              f"{args.mib} MiB per buffer\n")
        print(f"{'':30}{'shared buffer':>22}{'per-rank buffers':>22}")
        s, p = rows["shared"], rows["per rank"]
        print(f"{'registrations':30}{s['registrations']:>22}{p['registrations']:>22}")
        for key, label in (("registered", "bytes registered (pinned)"),
                           ("resident", "buffer resident, sum of Pss")):
            cells = [f"{r[key] / (1 << 20):.0f} MiB ({r[key] / nbytes:.2f}x)" for r in (s, p)]
            print(f"{label:30}{cells[0]:>22}{cells[1]:>22}")
        print(f"{'setup time (ms)':30}{s['seconds'] * 1e3:>22.1f}{p['seconds'] * 1e3:>22.1f}")
    if args.check:
        s, p = rows["shared"], rows["per rank"]
        ok = (s["registrations"] == 1 and p["registrations"] == ranks and
              s["registered"] == nbytes and p["registered"] == ranks * nbytes and
              0.9 < s["resident"] / nbytes < 1.1 and
              0.9 * ranks < p["resident"] / nbytes < 1.1 * ranks)
        print("check:", "passed" if ok else "FAILED", flush=True)
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
