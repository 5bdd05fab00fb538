/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Mapping a table into this process, once, on first need: by the first
 * lock (sim_lock.c) or after a few unlocked lookups (sim_table.c,
 * sim_lookup). Its own file so that the lock and the table code both
 * depend on it and not on each other: the lock calls into the table
 * (sim_repair, after taking it), the table never into the lock.
 */
#include <errno.h>
#include <sys/mman.h>

#include "rshare/rshare.h"
#include "sim/sim_table.h"
#include "util/error.h"

int sim_map_table_locked(struct sim_map *m, int fd)
{
	void *p;

	if (m->t)
		return RSHARE_OK;
	p = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return rs_fail(RSHARE_E_IO, errno, "cannot map the simulated object table");
	/* A release store: sim_lookup reads m->t without the mutex. */
	__atomic_store_n(&m->t, (struct sim_table *)p, __ATOMIC_RELEASE);
	return RSHARE_OK;
}

int sim_map_table(struct sim_map *m, int fd)
{
	int status;

	pthread_mutex_lock(&m->local);
	status = sim_map_table_locked(m, fd);
	pthread_mutex_unlock(&m->local);
	return status;
}
