# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Two "nodes" on this one host (run under mpirun -np 4): node_share's
test-only node colour splits the ranks into {0, 2} and {1, 3}. Each node
has one owner and its own context (its own sim0 table); no rank imports
from the other node, and a blob of one node is refused on the other's
device."""

import os
import sys

from mpi4py import MPI

import rshare
import rshare.mpi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mpitest import check, done, live_handles  # noqa: E402

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
color = rank % 2

with rshare.mpi.node_share(comm, device="sim0", timeout=20, _node_color=color) as share:
    node = share.node_comm
    members = node.allgather(rank)
    check(comm, members == [r for r in range(comm.Get_size()) if r % 2 == color],
          f"node {color} is ranks {members}")
    check(comm, share.owner == (rank == color) and share.owner_rank == color,
          f"the owner of node {color} is rank {color}, not {share.owner_rank}")
    owners = comm.allgather(share.owner)
    check(comm, [r for r, o in enumerate(owners) if o] == [0, 1], f"one owner per node: {owners}")

    table = rshare.inspect(share.pd.export())["table"]
    tables = comm.allgather((color, table))
    per_node = {c: {t for cc, t in tables if cc == c} for c in (0, 1)}
    check(comm, all(len(t) == 1 for t in per_node.values()) and per_node[0] != per_node[1],
          f"one table per node, different nodes different tables: {tables}")
    # Each node's table holds its own PD only: nobody from the other node
    # allocated or imported anything in it.
    check(comm, live_handles(share.device.fd) == [share.pd.handle],
          f"node {color}'s table holds {live_handles(share.device.fd)}")

    # The other node's PD is refused on this node's device.
    blobs = comm.allgather(share.pd.export())
    try:
        share.device.import_pd(blobs[rank ^ 1])
        check(comm, False, "a PD of the other node imported")
    except rshare.DeviceMismatch:
        pass
done(comm, "mpi_node_share_two_nodes")
