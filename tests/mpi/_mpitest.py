# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""What the MPI tests share: reading sim0's object table from outside the
library (to prove nothing is left in it), a per-rank check that names the
rank when it fails, and an uncaught exception on any rank aborting the job
(else the other ranks would wait for it in their next collective)."""

import mmap
import os
import struct
import sys
from typing import Any, List

from mpi4py import MPI

# The layout of sim0's table (capi/src/sim/sim_table.h): the header and the
# handle bitmaps are where they were in layouts 2 and 3 (3 changed only
# what the lock word means). The magic and layout are checked, and every
# test that reads the table also sees its own live objects through it, so a
# wrong offset fails the test.
_SIM_MAGIC = 0x3242415453485352
_SIM_LAYOUTS = (2, 3)
_LEAF_OFF = 1200      # struct sim_table: 128 (header) + offsetof(struct sim_shared, leaf)
_LEAF_WORDS = 4096    # SIM_MAX_OBJECTS / 64


def live_handles(fd: int) -> List[int]:
    """The handles in use in the sim0 table behind ``fd`` (any context's fd)."""
    with open(f"/proc/self/fd/{fd}", "rb") as f:
        with mmap.mmap(f.fileno(), _LEAF_OFF + 8 * _LEAF_WORDS, prot=mmap.PROT_READ) as m:
            magic, layout = struct.unpack_from("<QI", m, 0)
            assert magic == _SIM_MAGIC and layout in _SIM_LAYOUTS, \
                f"not a sim0 table of layout {_SIM_LAYOUTS}: magic {magic:#x}, layout {layout}"
            words = struct.unpack_from(f"<{_LEAF_WORDS}Q", m, _LEAF_OFF)
    return [64 * i + b for i, w in enumerate(words) if w for b in range(64) if w >> b & 1]


def check(comm: Any, cond: bool, what: str) -> None:
    """Fail this rank (and so the mpirun) naming the rank and the check."""
    if not cond:
        print(f"rank {comm.Get_rank()}: FAILED: {what}", file=sys.stderr, flush=True)
        comm.Abort(1)


def done(comm: Any, name: str) -> None:
    comm.Barrier()
    if comm.Get_rank() == 0:
        print(f"{name}: passed on {comm.Get_size()} ranks", flush=True)


def _abort_on_exception(kind: Any, value: Any, tb: Any) -> None:
    sys.__excepthook__(kind, value, tb)
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = _abort_on_exception
