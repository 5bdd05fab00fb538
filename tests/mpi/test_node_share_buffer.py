# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""node_share(buffer=...) on one node (run under mpirun -np 4): the owner
allocates the buffer (one registration) and every rank gets the same memory
and keys: each writes its rank into its slot through a numpy view, the
owner reads every slot. A buffer whose memory fd is swapped on one rank is
refused there, and every rank raises; nothing is left in sim0's table."""

import os
import sys

import numpy
from mpi4py import MPI

import rshare
import rshare.mpi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mpitest import check, done, live_handles  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
SLOT = 4096  # one page per rank's slot

with rshare.mpi.node_share(comm, buffer=size * SLOT, device="sim0", timeout=20) as share:
    buf = share.buffer
    check(comm, buf is not None and len(buf) == size * SLOT, f"the buffer: {buf!r}")
    check(comm, buf.imported is not share.owner, "imported on every rank but the owner")
    keys = comm.allgather((buf.lkey, buf.rkey, buf.addr))
    check(comm, len(set(keys)) == 1, f"the same MR keys and address on every rank: {keys}")
    table_fd = os.dup(share.device.fd)
    if share.owner:
        live = live_handles(table_fd)
        check(comm, sorted(live) == sorted([share.pd.handle, buf.handle]),
              f"one registration on the node: the table holds {live}")

    view = numpy.frombuffer(buf, dtype=numpy.int64)       # zero-copy
    check(comm, view.ctypes.data == buf.ptr, "numpy's view is the buffer's own memory")
    view[rank * SLOT // 8] = 1000 + rank                  # this rank's slot
    comm.Barrier()
    if share.owner:
        slots = [int(view[r * SLOT // 8]) for r in range(size)]
        check(comm, slots == [1000 + r for r in range(size)], f"the slots say {slots}")
    del view  # no view may outlive the block (unimport refuses while one lives)
    pd, dev = share.pd, share.device

check(comm, not buf.live and not pd.live and dev.closed, f"rank {rank} still holds objects")
comm.Barrier()
left = live_handles(table_fd)
check(comm, left == [], f"objects left in sim0's table after the block: {left}")
os.close(table_fd)

# Rank 2 is handed another memfd than the buffer's: its import is refused
# (FdMismatch) and every rank raises naming rank 2; nothing is left.
real_recv, real_open = rshare.mpi._recv_objects, rshare.mpi._open
tables = []


def swap_fd(sock):
    dev, payload, fds = rshare.recv_fds(sock)
    n = int.from_bytes(payload[8:10], "little")  # a blob's length (BLOB-FORMAT.md)
    pd_blob, buf_blob = payload[:n], payload[n:]
    stranger = os.memfd_create("not-the-buffer")
    os.ftruncate(stranger, size * SLOT)
    pd = None
    try:
        pd = dev.import_pd(pd_blob)
        pd.import_buffer(buf_blob, stranger)
    except BaseException:
        if pd is not None:
            pd.unimport()
        dev.close()
        raise
    finally:
        for fd in [*fds, stranger]:
            os.close(fd)
    raise AssertionError("a buffer imported with another memfd")


def keep_table(name):
    dev = real_open(name)
    tables.append(os.dup(dev.fd))
    return dev


rshare.mpi._recv_objects = swap_fd if rank == 2 else real_recv
rshare.mpi._open = keep_table
try:
    rshare.mpi.node_share(comm, buffer=size * SLOT, device="sim0", timeout=20)
    check(comm, False, "node_share returned with a refused buffer")
except rshare.mpi.NodeShareError as exc:
    check(comm, [r for r, _ in exc.failures] == [2] and "FdMismatch" in str(exc), str(exc))
finally:
    rshare.mpi._recv_objects, rshare.mpi._open = real_recv, real_open
if rank == 0:
    check(comm, len(tables) == 1 and live_handles(tables[0]) == [],
          f"a refused buffer left {[live_handles(fd) for fd in tables]}")
done(comm, "mpi_node_share_buffer")
