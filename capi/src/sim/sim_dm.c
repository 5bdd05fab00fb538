/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sim0's device memory, on the simulated table.
 *
 * DM: device memory lives in the memfd after the VAR pages, a device-wide
 * budget of SIM_DM_BYTES in SIM_DM_GRANULE granules; an allocation takes a
 * contiguous run, zeroed, or fails with NOMEM. Since 1.2 a process may map
 * its DM (the granules through the memfd, where the page size is the
 * granule's): like a VAR page, a granule some process maps is not given to
 * a new DM (sim_pages.c), so a mapping kept past a free never aliases
 * another DM. Reads and writes go through
 * pread/pwrite on the fd at an offset computed from the table's validated
 * copy, with the table lock held, so a concurrent free cannot redirect them.
 *
 * Untrusted-memory rule (sim_table.h): shared memory is read only through
 * sim_find/sim_lookup (validated copies) and the granule owner records, each
 * read once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "provider.h"
#include "sim/sim_kinds.h"
#include "sim/sim_table.h"
#include "util/error.h"

/* With the lock held: the granules free for a new DM, as a bit mask. A
 * granule is free if its owner record names no live DM (a record naming a
 * dead or garbage object is a leak, taken back here). */
static uint64_t free_granules(struct sim_table *t)
{
	uint64_t mask = 0;
	uint32_t last = 0;
	bool last_live = false;

	for (uint32_t g = 0; g < SIM_DM_GRANULES; g++) {
		uint32_t owner = SH_LOAD(t->s.dm_owner[g]);
		struct sim_objv o;

		if (owner != last) { /* each owner is judged once */
			last = owner;
			last_live = owner != 0 && owner <= SIM_MAX_OBJECTS &&
				    sim_find_quiet(t, SIM_DM, owner - 1, &o) &&
				    g >= o.dm_first && g < o.dm_first + o.dm_count;
		}
		if (owner == 0 || !last_live)
			mask |= 1ull << g;
	}
	return mask;
}

/* The lowest run of n free granules in mask, or -1. */
static int find_run(uint64_t mask, uint32_t n)
{
	uint64_t run = n == 64 ? ~0ull : (1ull << n) - 1;

	for (uint32_t g = 0; g + n <= SIM_DM_GRANULES; g++)
		if ((mask >> g & run) == run)
			return (int)g;
	return -1;
}

int sim_dm_alloc(struct rs_ctx *ctx, uint64_t length, struct rs_dm_info *dm)
{
	struct sim_map *m = ctx->prov;
	struct sim_objv o = { .type = SIM_DM, .length = length };
	struct sim_table *t;
	uint32_t n, h = 0;
	int first, status;

	if (length == 0 || length > SIM_DM_BYTES)
		return rs_fail(length ? RSHARE_E_NOMEM : RSHARE_E_INVAL, 0,
			       "cannot allocate %llu bytes of simulated device memory "
			       "(1 to %u bytes per allocation)",
			       (unsigned long long)length, SIM_DM_BYTES);
	n = (uint32_t)((length + SIM_DM_GRANULE - 1) / SIM_DM_GRANULE);
	status = sim_ctx_lock(ctx, &t);
	if (status)
		return status;
	status = sim_pages_ready(m, ctx->fd);
	if (status)
		goto out;
	/* A run no process maps any granule of (a freed DM's mapping lives on). */
	for (uint64_t free = free_granules(t);;) {
		uint32_t g;

		first = find_run(free, n);
		for (g = 0; first >= 0 && g < n; g++)
			if (!sim_page_unmapped(m, SIM_DM_UNIT((uint32_t)first + g)))
				break;
		if (first < 0 || g == n)
			break;
		free &= ~(1ull << ((uint32_t)first + g));
	}
	if (first < 0) {
		status = rs_fail(RSHARE_E_NOMEM, ENOSPC,
				 "no %u contiguous KiB of simulated device memory free "
				 "(%u KiB per device)", n * SIM_DM_GRANULE / 1024,
				 SIM_DM_BYTES / 1024);
		goto out;
	}
	/* Zeroed, as the kernel's DM allocation, under the lock. */
	if (fallocate(ctx->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(m->dm_area_off + (uint64_t)first * SIM_DM_GRANULE),
		      (off_t)n * SIM_DM_GRANULE) < 0) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot clear simulated device memory");
		goto out;
	}
	o.dm_first = (uint32_t)first;
	o.dm_count = n;
	status = sim_create(t, &o, &h);
out:
	sim_unlock(m);
	if (!status)
		*dm = (struct rs_dm_info){ .handle = h, .serial = o.serial, .length = length };
	return status;
}

int sim_dm_import(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	struct sim_objv o;
	int status = sim_lookup(ctx->prov, ctx->fd, SIM_DM, dm->handle, dm->serial, &o);

	if (!status && o.length != dm->length)
		status = rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
				 "blob's DM length %llu does not match the table's DM %u "
				 "(%llu bytes)", (unsigned long long)dm->length, dm->handle,
				 (unsigned long long)o.length);
	return status;
}

void sim_dm_unimport(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	(void)ctx; (void)dm;
}

int sim_dm_free(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	return sim_ctx_destroy(ctx, SIM_DM, dm->handle, dm->serial);
}

/* Copy to (write) or from the DM, the lock held throughout. */
static int dm_copy(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, void *buf,
		   size_t len, bool write)
{
	struct sim_map *m = ctx->prov;
	struct sim_objv o;
	struct sim_table *t;
	uint64_t at = 0;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_DM, dm->handle, dm->serial, &o);
	/* The core checked the range against its own copy of the length;
	 * the table's (validated: inside the DM's granules) decides. */
	if (!status && (offset > o.length || len > o.length - offset))
		status = rs_fail(RSHARE_E_INVAL, 0,
				 "%zu bytes at offset %llu are outside DM %u (%llu bytes)", len,
				 (unsigned long long)offset, dm->handle,
				 (unsigned long long)o.length);
	if (!status) /* validated: inside the device memory area */
		at = m->dm_area_off + (uint64_t)o.dm_first * SIM_DM_GRANULE + offset;
	while (!status && len) {
		ssize_t r = write ? pwrite(ctx->fd, buf, len, (off_t)at) :
				    pread(ctx->fd, buf, len, (off_t)at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			status = rs_fail(RSHARE_E_IO, r < 0 ? errno : EIO,
					 "cannot %s simulated device memory",
					 write ? "write" : "read");
			break;
		}
		buf = (uint8_t *)buf + r;
		len -= (size_t)r;
		at += (uint64_t)r;
	}
	sim_unlock(m);
	return status;
}

int sim_dm_write(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, const void *src,
		 size_t len)
{
	return dm_copy(ctx, dm, offset, (void *)src, len, true);
}

int sim_dm_read(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, void *dst,
		size_t len)
{
	return dm_copy(ctx, dm, offset, dst, len, false);
}

int sim_dm_map(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	struct sim_map *m = ctx->prov;
	struct sim_table *t;
	struct sim_objv o;
	uint32_t held = 0;
	void *p = MAP_FAILED;
	int status;

	if (m->page_size != SIM_DM_GRANULE)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0, "sim0 maps device memory only where the "
			       "page size is its %u-byte granule (here %u)", SIM_DM_GRANULE,
			       m->page_size);
	status = sim_ctx_lock(ctx, &t);
	if (status)
		return status;
	status = sim_find(t, SIM_DM, dm->handle, dm->serial, &o);
	/* validated: the granules lie inside the device memory area */
	while (!status && held < o.dm_count)
		if (!(status = sim_page_hold(m, ctx->fd, SIM_DM_UNIT(o.dm_first + held))))
			held++;
	if (!status) {
		p = mmap(NULL, (size_t)o.dm_count * SIM_DM_GRANULE, PROT_READ | PROT_WRITE,
			 MAP_SHARED, ctx->fd,
			 (off_t)(m->dm_area_off + (uint64_t)o.dm_first * SIM_DM_GRANULE));
		if (p == MAP_FAILED)
			status = rs_fail(RSHARE_E_IO, errno, "cannot map simulated device memory");
	}
	if (status)
		while (held)
			sim_page_release(m, SIM_DM_UNIT(o.dm_first + --held));
	sim_unlock(m);
	if (!status) {
		dm->map = p;
		dm->map_first = o.dm_first;
		dm->map_count = o.dm_count;
	}
	return status;
}

void sim_dm_unmap(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	struct sim_map *m = ctx->prov;

	munmap(dm->map, (size_t)dm->map_count * SIM_DM_GRANULE);
	pthread_mutex_lock(&m->local);
	for (uint32_t g = 0; g < dm->map_count; g++)
		sim_page_release(m, SIM_DM_UNIT(dm->map_first + g));
	pthread_mutex_unlock(&m->local);
	dm->map = NULL;
}
