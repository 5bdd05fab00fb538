# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""rshare.mpi.node_share on one node (run under mpirun -np 4): one owner,
the same context, PD and MR keys on every rank, and after the block no
object left in sim0's table and nothing live on any rank."""

import os
import sys
import time

from mpi4py import MPI

import rshare
import rshare.mpi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mpitest import check, done, live_handles  # noqa: E402

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

with rshare.mpi.node_share(comm, device="sim0", timeout=20) as share:
    node = share.node_comm
    check(comm, node.Get_size() == comm.Get_size(), "all ranks of this host are one node")
    owners = comm.allgather(share.owner)
    check(comm, owners.count(True) == 1 and owners[0], f"one owner, rank 0: {owners}")
    check(comm, share.owner_rank == 0, f"owner_rank {share.owner_rank}")
    check(comm, share.pd.imported is not share.owner, "imported on every rank but the owner")
    check(comm, share.device.fd != -1 and share.device.name == "sim0", "a sim0 context")

    # The same object table and PD everywhere: compare what each rank's
    # export of its handle says.
    fields = rshare.inspect(share.pd.export())
    mine = (fields["table"], fields["handle"], fields["serial"])
    check(comm, len(set(comm.allgather(mine))) == 1, f"one PD everywhere: {comm.allgather(mine)}")

    # An MR registered by the owner imports into every rank's PD with its keys.
    buf = bytearray(1 << 16)
    mr = share.pd.reg_mr(buf) if share.owner else None
    blob = node.bcast(mr.export() if mr else None, root=0)
    got = mr if mr else share.pd.import_mr(blob)
    keys = comm.allgather((got.lkey, got.rkey))
    check(comm, len(set(keys)) == 1, f"the same MR keys on every rank: {keys}")

    # The table holds exactly the PD and the MR: what the reader sees is real.
    table_fd = os.dup(share.device.fd)
    live = live_handles(table_fd)
    check(comm, sorted(live) == sorted([share.pd.handle, got.handle]),
          f"live in the table: {live}, expected the PD {share.pd.handle} and the MR {got.handle}")
    comm.Barrier()  # every rank has looked before anyone releases
    if share.owner:
        node.Barrier()  # the others unimported the MR before the owner deregisters it
        got.dereg()
    else:
        got.unimport()
        node.Barrier()
    pd, dev = share.pd, share.device
    if rank == comm.Get_size() - 1:
        # The others are leaving (the owner waits for this rank): the PD
        # must still be in the table until this rank has released it too.
        time.sleep(0.5)
        check(comm, pd.handle in live_handles(table_fd),
              "the owner freed the PD while a rank still held it")

# Every rank released; the owner freed after all the others had: the table
# (still open through table_fd) is empty, and nothing is live anywhere.
check(comm, not pd.live and dev.closed, f"rank {rank} still holds {pd!r} or {dev!r}")
comm.Barrier()
left = live_handles(table_fd)
check(comm, left == [], f"objects left in sim0's table after the block: {left}")
os.close(table_fd)

# pd=False: the context only, still one table for the node: a PD the owner
# allocates on it imports everywhere.
with rshare.mpi.node_share(comm, pd=False, device="sim0", timeout=20) as share:
    check(comm, share.pd is None, f"pd=False gave {share.pd!r}")
    own = share.device.alloc_pd() if share.owner else None
    blob = share.node_comm.bcast(own.export() if own else None)
    pd = own or share.device.import_pd(blob)
    check(comm, pd.handle == rshare.inspect(blob)["handle"], "the owner's PD everywhere")
    if not share.owner:
        pd.unimport()
    share.node_comm.Barrier()
    if share.owner:
        pd.free()
check(comm, "closed" in repr(share), f"after the block: {share!r}")
done(comm, "mpi_node_share")
