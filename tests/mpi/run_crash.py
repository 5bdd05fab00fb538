# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Kill one rank in the middle of node_share and check that every other
rank raises, naming why, promptly (mpi_node_share_crash):

    run_crash.py MPIRUN [ARGS...]     e.g. mpirun -np 4 --oversubscribe

Open MPI aborts a job when a rank dies (the others are killed, which is
also "not hanging"); here that is turned off so the others' own reaction
is seen. They exit without MPI_Finalize, so mpirun's status is non-zero."""

import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "crash_node_share.py")
# What the survivors must say, per case: the dead rank and why.
EXPECT = {
    "member": r"raised NodeShareError: node_share failed: rank 3: the rank closed its "
              r"connection.*\(it exited or crashed\)",
    "owner": r"raised NodeShareError: node_share failed: rank {rank}: could not get the "
             r"objects from the node owner \(rank 0\)",
}


def run(case, mpirun):
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as meeting:
        proc = subprocess.run([*mpirun, "--mca", "orte_abort_on_non_zero_status", "0",
                               sys.executable, PROGRAM, case, meeting],
                              capture_output=True, text=True, timeout=90)
    took = time.monotonic() - start
    out = proc.stdout + proc.stderr
    print(f"--- {case}: mpirun exit status {proc.returncode}, {took:.1f} s\n{out}")
    victim = 0 if case == "owner" else 3
    for rank in range(4):
        if rank == victim:
            continue
        want = f"rank {rank}: " + EXPECT[case].format(rank=rank)
        assert re.search(want, out), f"{case}: rank {rank} did not say /{want}/"
    assert proc.returncode != 0, f"{case}: mpirun did not report the dead rank"
    assert took < 30, f"{case}: took {took:.1f} s"


def main():
    for case in ("member", "owner"):
        run(case, sys.argv[1:])
    print("mpi_node_share_crash: passed on 4 ranks")


if __name__ == "__main__":
    main()
