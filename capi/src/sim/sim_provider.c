/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The simulated provider "sim0": the provider table's operations over the
 * simulated object table (sim_table.h). Its command fd is a sealed memfd:
 * the seals stop any peer from shrinking or growing the file under
 * another's mappings, so a mapped table or VAR page never faults.
 *
 * Untrusted-memory rule (sim_table.h): the memfd is untrusted input. This
 * file reads shared memory only through sim_find/sim_lookup (validated copies) and the
 * checks below; every offset it computes comes from validated copies and
 * the process's own constants.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"
#include "sim/sim_mem.h"
#include "sim/sim_table.h"
#include "util/error.h"
#include "util/fdutil.h"

#define SIM_NAME "sim0"

static bool sim_hidden(void)
{
	const char *e = getenv("RSHARE_SIM");
	return e && strcmp(e, "0") == 0;
}

static int sim_list(struct rs_devinfo *out, size_t cap, size_t *count)
{
	*count = sim_hidden() ? 0 : 1;
	if (*count && cap) {
		strcpy(out[0].name, SIM_NAME);
		out[0].guid = SIM_GUID;
		out[0].provider = RSHARE_PROVIDER_SIM;
	}
	return RSHARE_OK;
}

static void fill_ctx(int fd, struct sim_map *m, struct rs_ctx *ctx)
{
	ctx->fd = fd;
	ctx->guid = SIM_GUID;
	ctx->table_id = m->table_id;
	strcpy(ctx->name, SIM_NAME);
	ctx->prov = m;
}

static int sim_open(const char *name, struct rs_ctx *ctx)
{
	struct sim_header layout;
	struct sim_table *t;
	struct sim_map *m;
	uint64_t table_id = 0;
	uint32_t ps = (uint32_t)sysconf(_SC_PAGESIZE);
	int fd, status;

	if (strcmp(name, SIM_NAME) != 0 || sim_hidden())
		return rs_fail(RSHARE_E_NODEV, 0, "no simulated device named \"%s\"", name);
	while (table_id == 0)
		if (getrandom(&table_id, sizeof(table_id), 0) != sizeof(table_id))
			return rs_fail(RSHARE_E_IO, errno, "getrandom failed");
	sim_layout(ps, &layout);
	fd = memfd_create("rshare-sim0", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return rs_fail(errno == ENOMEM ? RSHARE_E_NOMEM : RSHARE_E_IO, errno,
			       "memfd_create for the simulated table failed");
	/* Sized for the maximum once, then sealed: a sparse file, so memory
	 * follows what is live, and nobody's mapping can ever lose its end. */
	if (ftruncate(fd, (off_t)layout.file_size) < 0) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot size the simulated table");
		goto fail;
	}
	t = mmap(NULL, layout.var_area_off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot map the simulated table");
		goto fail;
	}
	sim_table_init(t, ps, table_id);
	status = fcntl(fd, F_ADD_SEALS, SIM_SEALS) < 0 ?
			 rs_fail(RSHARE_E_IO, errno, "cannot seal the simulated table") :
			 sim_map_add_new(fd, t, &m);
	if (!status) {
		fill_ctx(fd, m, ctx);
		return RSHARE_OK;
	}
	munmap(t, layout.var_area_off);
fail:
	close(fd);
	return status;
}

/* Cheap recognition: a memfd with our seals. Only memfds (and other shmem
 * files) answer F_GET_SEALS, so anything else is turned away by this one
 * system call; a sealed memfd that is not a table is refused by
 * sim_map_get(), which validates the header of a table it has not seen
 * (magic included) and the id of one it holds. The seals checked here are
 * what makes the file's size fixed. */
static bool sim_owns_fd(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & SIM_SEALS) == SIM_SEALS;
}

/* Only ever called for an fd sim_owns_fd() accepted (rs_device_adopt): its
 * seals are checked there, on every adopt, and sim_map_get() reads and
 * checks the header. */
static int sim_import(int fd, struct rs_ctx *ctx)
{
	struct sim_map *m;
	int status = sim_map_get(fd, &m);
	if (status)
		return status;
	fill_ctx(fd, m, ctx);
	return RSHARE_OK;
}

static void sim_close(struct rs_ctx *ctx)
{
	sim_map_put(ctx->prov);
	close(ctx->fd);
}

static int lock(struct rs_ctx *ctx, struct sim_table **t)
{
	struct sim_map *m = ctx->prov;
	int status = sim_lock(m, ctx->fd);

	if (!status)
		*t = m->t;
	return status;
}

static void unlock(struct rs_ctx *ctx)
{
	sim_unlock(ctx->prov);
}

static int sim_pd_alloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct sim_objv o = { .type = SIM_PD };
	struct sim_table *t;
	int status = lock(ctx, &t);

	if (status)
		return status;
	status = sim_create(t, &o, &pd->handle);
	unlock(ctx);
	if (!status)
		pd->serial = o.serial;
	return status;
}

static int sim_pd_import(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct sim_objv o;

	return sim_lookup(ctx->prov, ctx->fd, SIM_PD, pd->handle, pd->serial, &o);
}

static void sim_unimport(struct rs_ctx *ctx, void *obj)
{
	(void)ctx; (void)obj; /* local state only, as ibv_unimport_pd */
}

static void sim_pd_unimport(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	sim_unimport(ctx, pd);
}

static int sim_pd_dealloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct sim_objv o;
	struct sim_table *t;
	int status = lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_PD, pd->handle, pd->serial, &o);
	if (!status && o.mr_count)
		status = rs_fail(RSHARE_E_BUSY, EBUSY,
				 "PD %u still has %u memory region(s) registered; "
				 "deregister them first", pd->handle, o.mr_count);
	if (!status)
		sim_destroy(t, pd->handle, &o);
	unlock(ctx);
	return status;
}

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

static int sim_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var)
{
	struct sim_objv o = { .type = SIM_VAR, .flags = flags };
	struct sim_map *m = ctx->prov;
	struct sim_table *t;
	uint32_t p;
	int status = lock(ctx, &t);

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
	unlock(ctx);
	return status;
}

static int sim_var_export(struct rs_ctx *ctx, struct rs_var_info *var)
{
	(void)ctx;
	var->priv_len = 0; /* the blob's fields say it all */
	return RSHARE_OK;
}

static int sim_var_import(struct rs_ctx *ctx, struct rs_var_info *var)
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

static void sim_var_unimport(struct rs_ctx *ctx, struct rs_var_info *var)
{
	sim_unimport(ctx, var);
}

static int sim_var_free(struct rs_ctx *ctx, struct rs_var_info *var)
{
	struct sim_objv o;
	struct sim_table *t;
	int status = lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_VAR, var->handle, var->serial, &o);
	if (!status)
		sim_destroy(t, var->handle, &o);
	unlock(ctx);
	return status;
}

/* Map the page of a VAR that still exists, recording (before the table
 * lock is dropped, so no allocator can miss it) that this process maps it. */
static int sim_var_map(struct rs_ctx *ctx, const struct rs_var_info *var, void **addr)
{
	struct sim_map *m = ctx->prov;
	struct rs_var_info geo = *var;
	struct sim_objv o;
	struct sim_table *t;
	void *p;
	int status = lock(ctx, &t);

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
	unlock(ctx);
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

static void sim_var_unmap(struct rs_ctx *ctx, const struct rs_var_info *var, void *addr)
{
	struct sim_map *m = ctx->prov;

	munmap(addr, m->page_size);
	pthread_mutex_lock(&m->local);
	sim_page_release(m, var->page_id);
	pthread_mutex_unlock(&m->local);
}

const struct rs_provider rs_sim_provider = {
	.name = "sim",
	.id = RSHARE_PROVIDER_SIM,
	.list = sim_list,
	.open = sim_open,
	.owns_fd = sim_owns_fd,
	.import = sim_import,
	.close = sim_close,
	.pd_alloc = sim_pd_alloc,
	.pd_import = sim_pd_import,
	.pd_unimport = sim_pd_unimport,
	.pd_dealloc = sim_pd_dealloc,
	.var_alloc = sim_var_alloc,
	.var_export = sim_var_export,
	.var_import = sim_var_import,
	.var_unimport = sim_var_unimport,
	.var_free = sim_var_free,
	.var_map = sim_var_map,
	.var_unmap = sim_var_unmap,
	.caps = sim_caps,
	.mr_reg = sim_mr_reg,
	.mr_import = sim_mr_import,
	.mr_unimport = sim_mr_unimport,
	.mr_dereg = sim_mr_dereg,
	.dm_alloc = sim_dm_alloc,
	.dm_import = sim_dm_import,
	.dm_unimport = sim_dm_unimport,
	.dm_free = sim_dm_free,
	.dm_write = sim_dm_write,
	.dm_read = sim_dm_read,
	.dm_map = sim_dm_map,
	.dm_unmap = sim_dm_unmap,
};
