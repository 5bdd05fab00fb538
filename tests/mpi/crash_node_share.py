# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A rank killed in the middle of node_share (run by run_crash.py under
mpirun, with Open MPI's abort on a dead rank turned off so that the others
live to report): every other rank of the node raises NodeShareError naming
the cause, instead of waiting. ``owner``: the owner dies as it sends the
objects; ``member``: rank 3 dies while importing them."""

import os
import signal
import sys
import time

from mpi4py import MPI

import rshare.mpi

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
who = sys.argv[1]  # argv[2]: a directory for the survivors' meeting
victim = 0 if who == "owner" else 3


def die(*args):
    os.kill(os.getpid(), signal.SIGKILL)


if rank == victim:
    if who == "owner":
        rshare.mpi._send = die
    else:
        rshare.mpi._recv_objects = die
try:
    rshare.mpi.node_share(comm, device="sim0", timeout=20)
    print(f"rank {rank}: node_share returned", flush=True)
except rshare.mpi.NodeShareError as exc:
    print(f"rank {rank}: raised NodeShareError: {exc}", flush=True)
# Wait until every survivor has spoken (a file each in the driver's
# directory: MPI cannot gather with a dead rank), then leave without
# MPI_Finalize, which would wait for the dead rank; the first to leave
# makes mpirun end the job.
open(os.path.join(sys.argv[2], str(rank)), "w").close()
deadline = time.monotonic() + 20
while len(os.listdir(sys.argv[2])) < comm.Get_size() - 1 and time.monotonic() < deadline:
    time.sleep(0.05)
os._exit(0)
