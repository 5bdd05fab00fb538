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
#include "sim/sim_kinds.h"
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

int sim_ctx_lock(struct rs_ctx *ctx, struct sim_table **t)
{
	struct sim_map *m = ctx->prov;
	int status = sim_lock(m, ctx->fd);

	if (!status)
		*t = m->t;
	return status;
}

void sim_ctx_unlock(struct rs_ctx *ctx)
{
	sim_unlock(ctx->prov);
}

int sim_ctx_destroy(struct rs_ctx *ctx, uint32_t type, uint32_t handle, uint64_t serial)
{
	struct sim_objv o;
	struct sim_table *t;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, type, handle, serial, &o);
	if (!status)
		sim_destroy(t, handle, &o);
	sim_ctx_unlock(ctx);
	return status;
}

static uint32_t sim_caps(struct rs_ctx *ctx)
{
	const struct sim_map *m = ctx->prov;

	return RSHARE_CAP_PD | RSHARE_CAP_VAR | RSHARE_CAP_MR | RSHARE_CAP_DM |
	       (m->page_size == SIM_DM_GRANULE ? (uint32_t)RSHARE_CAP_DM_MAP : 0);
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
