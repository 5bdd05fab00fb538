# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A failing rank makes node_share raise on every rank of the node, naming
the rank and its cause, and leaves nothing behind (run under mpirun -np 4):
an import refused on one rank (a corrupted blob), an exception on another,
the owner's own failure (no such device); the owner's block raising while
the others wait for it; then a clean share works, and a process that is not
a rank of the node is dropped by the owner."""

import os
import subprocess
import sys

from mpi4py import MPI

import rshare
import rshare.mpi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mpitest import check, done, live_handles  # noqa: E402

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
real_recv = rshare.mpi._recv_objects
real_open = rshare.mpi._open
tables = []  # the owner keeps a dup of each table it opens, to look inside


def keep_table(name):
    dev = real_open(name)
    tables.append(os.dup(dev.fd))
    return dev


def corrupt_blob(sock):
    dev, payload, fds = rshare.recv_fds(sock)
    bad = bytearray(payload)
    bad[20] ^= 0x40  # inside the PD blob: its checksum no longer matches
    try:
        return dev, {"pd": [dev.import_pd(bytes(bad))]}
    except BaseException:
        dev.close()
        raise


def raise_error(sock):
    raise RuntimeError("rank 1 gives up")


def expect_failure(case, failing, cause, **kwargs):
    """Run node_share with ``case`` patched in on rank ``failing``; every
    rank must raise NodeShareError naming exactly that rank and the cause."""
    rshare.mpi._open = keep_table
    rshare.mpi._recv_objects = case if rank == failing else real_recv
    try:
        rshare.mpi.node_share(comm, device=kwargs.pop("device", "sim0"), timeout=20, **kwargs)
    except rshare.mpi.NodeShareError as exc:
        failures = exc.failures
        check(comm, [r for r, _ in failures] == [failing] and cause in failures[0][1]
              and cause in str(exc), f"{case.__name__}: raised {exc}")
    else:
        check(comm, False, f"{case.__name__}: node_share returned on rank {rank}")
    finally:
        rshare.mpi._open, rshare.mpi._recv_objects = real_open, real_recv
    comm.Barrier()


expect_failure(corrupt_blob, 2, "BlobCorrupt")
expect_failure(raise_error, 1, "RuntimeError: rank 1 gives up")
expect_failure(real_recv, 0, "NoDevice", device="no-such-device")

# The owner freed the PD of each failed attempt (after every rank released).
if rank == 0:
    check(comm, len(tables) == 2, f"the owner opened {len(tables)} tables, not 2")
    for fd in tables:
        check(comm, live_handles(fd) == [], f"a failed share left {live_handles(fd)}")
        os.close(fd)

# The owner's block raises while the others wait for it in an MPI call: it
# leaves without waiting for them (else both would wait forever) and without
# freeing under them: the PD stays theirs to use until they leave.
try:
    with rshare.mpi.node_share(comm, device="sim0", timeout=20) as share:
        if share.owner:
            raise RuntimeError("the owner's block fails")
        check(comm, comm.bcast(None, root=0) == "out", "the owner left its block")
        check(comm, share.pd.handle in live_handles(share.device.fd),
              "the owner freed the PD while the others were in their blocks")
        share.device.import_pd(share.pd.export()).unimport()
except RuntimeError as exc:
    check(comm, rank == 0 and "owner's block" in str(exc), f"rank {rank}: {exc}")
    comm.bcast("out", root=0)
comm.Barrier()

# A process of this user that is not a rank of the node (another job, a
# stranger that found the socket) connects first: the owner drops it (it
# reads end-of-file, not the objects) and the node's ranks share as usual.
STRANGER = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
print("connected", flush=True)
s.settimeout(20)
sys.exit(0 if s.recv(65536) == b"" else 1)
"""
real_private_socket = rshare.mpi._private_socket
strangers = []


def socket_with_stranger(size):
    listener, path = real_private_socket(size)
    proc = subprocess.Popen([sys.executable, "-c", STRANGER, path], stdout=subprocess.PIPE)
    check(comm, proc.stdout.readline() == b"connected\n", "the stranger connected")
    strangers.append(proc)
    return listener, path


rshare.mpi._private_socket = socket_with_stranger
with rshare.mpi.node_share(comm, device="sim0", timeout=20) as share:
    check(comm, share.pd.live, "a share after failed ones works")
    rshare.mpi._private_socket = real_private_socket
    if rank == 0:
        check(comm, len(strangers) == 1 and strangers[0].wait(20) == 0,
              "the stranger was dropped (it read end-of-file)")
done(comm, "mpi_node_share_fail")
