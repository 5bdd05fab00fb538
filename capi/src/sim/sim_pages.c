/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * VAR pages are never aliased: a freed VAR's page is not given to another
 * VAR while any live process may still map it (the kernel, likewise, keeps
 * a VAR's page until its last mapping is gone), so a stale mapping can
 * never reach a newer VAR.
 *
 * How a process says "I map page p": an OFD read lock on the page's byte
 * range of the memfd, held through the process's own open file description.
 * Its own, because OFD locks belong to descriptions and an fd received by
 * SCM_RIGHTS, inherited or dup'ed shares the sender's description: so the
 * process reopens the memfd once through /proc/self/fd (a new description,
 * close-on-exec, never passed on). The kernel drops the locks when the last
 * fd of the description closes, that is when the process dies or execs.
 * After a fork, parent and child each take a new description of their own
 * (sim_pages_after_fork) before letting go of the shared one. Within the
 * process, page_maps counts the mappings of each page, as one description's
 * locks on a range do not stack. The allocator takes a page only if this
 * process maps it no more and F_OFD_GETLK finds no other description's lock.
 *
 * Device memory granules are tracked the same way (since 1.2: a process
 * may map its DM), as units after the VAR pages (SIM_DM_UNIT).
 *
 * Untrusted-memory rule (sim_table.h): nothing here reads shared memory;
 * page numbers come from validated copies (sim_find) or our own allocator.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "sim/sim_table.h"
#include "util/error.h"

/* O_NONBLOCK: a peer holding a lease on the memfd makes open() fail with
 * EWOULDBLOCK at once instead of waiting fs.lease-break-time (45 s) for it;
 * sim_lock retries within its bound. Nothing reads or writes through this
 * description, so the flag changes nothing else. */
static int reopen(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
}

static struct flock page_range(const struct sim_map *m, uint32_t p, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };

	if (p < SIM_VAR_PAGES) {
		fl.l_start = (off_t)(m->var_area_off + (uint64_t)p * m->page_size);
		fl.l_len = (off_t)m->page_size;
	} else {
		fl.l_start = (off_t)(m->dm_area_off + (uint64_t)(p - SIM_VAR_PAGES) * SIM_DM_GRANULE);
		fl.l_len = SIM_DM_GRANULE;
	}
	return fl;
}

static int page_lock(const struct sim_map *m, int ofd, uint32_t p, short type)
{
	struct flock fl = page_range(m, p, type);

	return fcntl(ofd, F_OFD_SETLK, &fl);
}

/* After a fork: a description of our own, with a lock for every page we
 * map and our liveness byte (sim_lock.c), then let go of the shared one, whose locks hold until the other
 * process has done the same (or has died). If no fd can be opened now, keep
 * the shared one and drop none of its locks until we can: unlocking a range
 * there would drop the other process's lock on it too. */
static void own_description(struct sim_map *m)
{
	int nfd = reopen(m->ofd);

	if (nfd < 0) {
		m->ofd_shared = true;
		return;
	}
	for (uint32_t p = 0; p < SIM_MAP_UNITS; p++)
		if (m->page_maps[p])
			page_lock(m, nfd, p, F_RDLCK);
	if (m->lock_value) {
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
				    .l_start = sim_live_offset(m->lock_value), .l_len = 1 };
		fcntl(nfd, F_OFD_SETLK, &fl); /* a read lock: it cannot conflict */
	}
	close(m->ofd);
	m->ofd = nfd;
	m->ofd_shared = false;
}

int sim_pages_ready(struct sim_map *m, int fd)
{
	if (m->ofd_shared)
		own_description(m);
	if (m->ofd_shared)
		return rs_fail(RSHARE_E_IO, errno,
			       "cannot reopen the simulated table after a fork (needed to "
			       "track VAR page mappings apart from the other process)");
	if (m->ofd >= 0)
		return RSHARE_OK;
	m->ofd = reopen(fd);
	if (m->ofd < 0)
		return rs_fail(RSHARE_E_IO, errno,
			       "cannot reopen the simulated table through /proc/self/fd/%d "
			       "(needed to track VAR page mappings; is /proc mounted?)", fd);
	return RSHARE_OK;
}

bool sim_page_unmapped(struct sim_map *m, uint32_t p)
{
	struct flock fl = page_range(m, p, F_WRLCK);

	if (p >= SIM_MAP_UNITS || m->page_maps[p] != 0 || m->ofd < 0 || m->ofd_shared)
		return false;
	/* Our own description's locks never conflict with our probe; those
	 * are counted in page_maps. */
	return fcntl(m->ofd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
}

int sim_page_hold(struct sim_map *m, int fd, uint32_t p)
{
	int status = sim_pages_ready(m, fd);

	if (status)
		return status;
	if (m->page_maps[p] == 0 && page_lock(m, m->ofd, p, F_RDLCK) < 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot mark simulated %s %u as mapped",
			       p < SIM_VAR_PAGES ? "VAR page" : "device memory granule",
			       p < SIM_VAR_PAGES ? p : p - SIM_VAR_PAGES);
	m->page_maps[p]++;
	return RSHARE_OK;
}

void sim_page_release(struct sim_map *m, uint32_t p)
{
	if (p < SIM_MAP_UNITS && m->page_maps[p] > 0 && --m->page_maps[p] == 0 &&
	    !m->ofd_shared)
		page_lock(m, m->ofd, p, F_UNLCK);
}

void sim_pages_after_fork(struct sim_map *m, bool child)
{
	if (child)
		m->lock_value = 0;
	if (m->ofd >= 0)
		own_description(m);
}
