/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sim0's VARs: a table object owning one page of the memfd's VAR area,
 * mapped through the device fd as mlx5 maps a VAR page; a page is given
 * out again only once no process maps it (its owner record and lock).
 *
 * Untrusted-memory rule (sim_table.h): shared memory is read only through
 * sim_find/sim_lookup (validated copies) and the page owner records, each
 * read once.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "provider.h"
#include "sim/sim_kinds.h"
#include "sim/sim_table.h"
#include "util/error.h"

static void var_geometry(struct sim_map *m, struct rs_var_info *var)
{
	var->length = m->page_size;
	var->mmap_off = m->var_area_off + (uint64_t)var->page_id * m->page_size;
}

/* With the lock held: may VAR page p be given to a new VAR? Its owner
 * record must name no live VAR on it (a record naming a dead or garbage
 * object is a leak, taken back here), and no process may still map it. */
static bool page_free(struct rs_ctx *ctx, struct sim_table *t, uint32_t p)
{
	uint32_t owner = SH_LOAD(t->s.var_owner[p]);
	struct sim_objv o;

	if (owner != 0 && owner <= SIM_MAX_OBJECTS &&
	    sim_find_quiet(t, SIM_VAR, owner - 1, &o) && o.page == p)
		return false;
	return sim_page_unmapped(ctx->prov, p);
}

int sim_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var)
{
	struct sim_objv o = { .type = SIM_VAR, .flags = flags };
	struct sim_map *m = ctx->prov;
	struct sim_table *t;
	uint32_t p;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_pages_ready(m, ctx->fd); /* to ask who maps a page */
	if (status)
		goto out;
	for (p = 0; p < SIM_VAR_PAGES && !page_free(ctx, t, p); p++)
		;
	if (p == SIM_VAR_PAGES) {
		status = rs_fail(RSHARE_E_NOMEM, ENOSPC,
				 "all %u simulated VAR pages are in use (or still mapped by "
				 "a process)", SIM_VAR_PAGES);
		goto out;
	}
	var->page_id = p;
	var->flags = flags;
	var_geometry(m, var);
	/* A new VAR starts zeroed, whatever its page held before; done under
	 * the lock, so nobody can see the page before it is clean. */
	if (fallocate(ctx->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)var->mmap_off, var->length) < 0) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot clear simulated VAR page %u", p);
		goto out;
	}
	o.page = p;
	status = sim_create(t, &o, &var->handle);
	var->serial = o.serial;
out:
	sim_ctx_unlock(ctx);
	return status;
}

int sim_var_export(struct rs_ctx *ctx, struct rs_var_info *var)
{
	(void)ctx;
	var->priv_len = 0; /* the blob's fields say it all */
	return RSHARE_OK;
}

int sim_var_import(struct rs_ctx *ctx, struct rs_var_info *var)
{
	struct rs_var_info want = *var;
	struct sim_objv o;
	int status = sim_lookup(ctx->prov, ctx->fd, SIM_VAR, var->handle, var->serial, &o);

	if (status)
		return status;
	want.page_id = o.page; /* validated: < SIM_VAR_PAGES */
	var_geometry(ctx->prov, &want);
	if (want.page_id != var->page_id || want.length != var->length ||
	    want.mmap_off != var->mmap_off || var->priv_len != 0)
		return rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
			       "blob's VAR attributes (page %u, %u bytes at 0x%llx) do not "
			       "match the table's VAR %u",
			       var->page_id, var->length, (unsigned long long)var->mmap_off,
			       var->handle);
	return RSHARE_OK;
}

void sim_var_unimport(struct rs_ctx *ctx, struct rs_var_info *var)
{
	(void)ctx; (void)var; /* local state only */
}

int sim_var_free(struct rs_ctx *ctx, struct rs_var_info *var)
{
	struct sim_objv o;
	struct sim_table *t;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_VAR, var->handle, var->serial, &o);
	if (!status)
		sim_destroy(t, var->handle, &o);
	sim_ctx_unlock(ctx);
	return status;
}

/* Map the page of a VAR that still exists, recording (before the table
 * lock is dropped, so no allocator can miss it) that this process maps it. */
int sim_var_map(struct rs_ctx *ctx, const struct rs_var_info *var, void **addr)
{
	struct sim_map *m = ctx->prov;
	struct rs_var_info geo = *var;
	struct sim_objv o;
	struct sim_table *t;
	void *p;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_VAR, var->handle, var->serial, &o);
	if (!status && o.page != var->page_id)
		status = RSHARE_E_NOT_FOUND;
	if (status)
		status = rs_fail(RSHARE_E_IO, ESTALE,
				 "cannot map VAR %u: it was freed (its page may belong to "
				 "another VAR now)", var->handle);
	if (!status)
		status = sim_page_hold(m, ctx->fd, o.page);
	sim_ctx_unlock(ctx);
	if (status)
		return status;
	geo.page_id = o.page;
	var_geometry(m, &geo);
	p = mmap(NULL, geo.length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->fd,
		 (off_t)geo.mmap_off);
	if (p == MAP_FAILED) {
		status = rs_fail(RSHARE_E_IO, errno, "mmap of simulated VAR page %u failed",
				 o.page);
		pthread_mutex_lock(&m->local);
		sim_page_release(m, o.page);
		pthread_mutex_unlock(&m->local);
		return status;
	}
	*addr = p;
	return RSHARE_OK;
}

void sim_var_unmap(struct rs_ctx *ctx, const struct rs_var_info *var, void *addr)
{
	struct sim_map *m = ctx->prov;

	munmap(addr, m->page_size);
	pthread_mutex_lock(&m->local);
	sim_page_release(m, var->page_id);
	pthread_mutex_unlock(&m->local);
}
