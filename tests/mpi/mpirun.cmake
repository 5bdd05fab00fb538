# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# How the tests start MPI jobs (Open MPI's mpirun), for tests/mpi and
# examples/c: RSHARE_MPIRUN is the command up to the program, RSHARE_MPI_ENV
# the environment. 4 ranks, oversubscribed (CI has 2 cores); allowed as root
# (CI runs as root); only shared memory between ranks (btl self,vader,
# pml ob1: no network device probed, so a container without a network works
# as long as it has loopback, which Open MPI's own runtime needs); no ssh
# (plm isolated); no cross-memory attach (single-copy none: containers
# often forbid the ptrace access it needs).
find_program(RSHARE_MPIEXEC NAMES mpirun mpiexec)
set(RSHARE_MPIRUN ${RSHARE_MPIEXEC} -np 4 --oversubscribe)
set(RSHARE_MPI_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_plm=isolated
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1)
