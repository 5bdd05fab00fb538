/*
 * The simulated provider "sim0": the provider table's operations over the
 * simulated object table (sim_table.h). Its command fd is a sealed memfd:
 * the seals stop any peer from shrinking or growing the file under
 * another's mappings, so a mapped table or VAR page never faults.
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
#include "sim/sim_table.h"
#include "util/error.h"
#include "util/fdutil.h"

#define SIM_NAME "sim0"
#define SIM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

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

static uint32_t page_size(void)
{
	return (uint32_t)sysconf(_SC_PAGESIZE);
}

/* Fill ctx for the table in fd; fd stays the caller's on failure. The
 * table itself is mapped on first use (sim_lock). */
static int attach(int fd, const struct sim_header *hdr, struct rs_ctx *ctx)
{
	struct sim_view *v = calloc(1, sizeof(*v));

	if (!v)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a simulated context");
	atomic_init(&v->map, NULL);
	v->fd = fd;
	v->map_len = hdr->var_area_off;
	v->page_size = hdr->page_size;
	v->var_area_off = hdr->var_area_off;
	v->table_id = hdr->table_id;
	ctx->fd = fd;
	ctx->guid = SIM_GUID;
	ctx->table_id = hdr->table_id;
	strcpy(ctx->name, SIM_NAME);
	ctx->prov = v;
	return RSHARE_OK;
}

static int sim_open(const char *name, struct rs_ctx *ctx)
{
	struct sim_table *t;
	uint64_t table_id = 0, var_off, size;
	uint32_t ps = page_size();
	int fd, status;

	if (strcmp(name, SIM_NAME) != 0 || sim_hidden())
		return rs_fail(RSHARE_E_NODEV, 0, "no simulated device named \"%s\"", name);
	while (table_id == 0)
		if (getrandom(&table_id, sizeof(table_id), 0) != sizeof(table_id))
			return rs_fail(RSHARE_E_IO, errno, "getrandom failed");
	sim_layout(ps, &var_off, &size);
	fd = memfd_create("rshare-sim0", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return rs_fail(errno == ENOMEM ? RSHARE_E_NOMEM : RSHARE_E_IO, errno,
			       "memfd_create for the simulated table failed");
	if (ftruncate(fd, (off_t)size) < 0) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot size the simulated table");
		goto fail;
	}
	t = mmap(NULL, var_off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot map the simulated table");
		goto fail;
	}
	status = sim_table_init(t, ps, table_id);
	if (!status && fcntl(fd, F_ADD_SEALS, SIM_SEALS) < 0)
		status = rs_fail(RSHARE_E_IO, errno, "cannot seal the simulated table");
	if (!status)
		status = attach(fd, &t->h, ctx);
	if (!status) {
		/* Keep the set-up mapping as the context's table mapping. */
		atomic_store(&((struct sim_view *)ctx->prov)->map, t);
		return RSHARE_OK;
	}
	munmap(t, var_off);
fail:
	close(fd);
	return status;
}

/* Cheap recognition: a sealed memfd that starts with our magic. Only
 * memfds (and other shmem files) answer F_GET_SEALS, so anything else is
 * turned away by the first syscall. */
static bool sim_owns_fd(int fd)
{
	uint64_t magic;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || (seals & SIM_SEALS) != SIM_SEALS)
		return false;
	return pread(fd, &magic, sizeof(magic), 0) == sizeof(magic) && magic == SIM_MAGIC;
}

static int sim_import(int fd, struct rs_ctx *ctx)
{
	struct sim_header hdr;
	uint64_t var_off, size;
	struct stat st;

	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || (seals & SIM_SEALS) != SIM_SEALS)
		return rs_fail(RSHARE_E_NODEV, 0, "fd %d is not a simulated device context", fd);
	if (fstat(fd, &st) < 0 ||
	    pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		return rs_fail(RSHARE_E_IO, errno, "cannot read the simulated table header");
	sim_layout(page_size(), &var_off, &size);
	/* The constants must be exactly what this library would have made:
	 * after this point they are never read from shared memory again. */
	if (hdr.layout != SIM_LAYOUT || hdr.page_size != page_size() ||
	    hdr.max_objects != SIM_MAX_OBJECTS || hdr.var_pages != SIM_VAR_PAGES ||
	    hdr.var_area_off != var_off || hdr.file_size != size ||
	    (uint64_t)st.st_size != size || hdr.guid != SIM_GUID || hdr.table_id == 0 ||
	    hdr.magic != SIM_MAGIC)
		return rs_fail(RSHARE_E_NODEV, 0,
			       "fd %d holds a simulated table of another layout or a damaged one",
			       fd);
	return attach(fd, &hdr, ctx);
}

static void sim_close(struct rs_ctx *ctx)
{
	struct sim_view *v = ctx->prov;

	sim_view_unmap(v);
	free(v);
	close(ctx->fd);
}

static struct sim_view *view(struct rs_ctx *ctx)
{
	return ctx->prov;
}

static int sim_pd_alloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	uint32_t page;

	return sim_obj_alloc(view(ctx), SIM_PD, 0, &pd->handle, &pd->serial, &page);
}

static int sim_pd_import(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	uint32_t page;

	return sim_obj_lookup(view(ctx), SIM_PD, pd->handle, pd->serial, &page);
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
	return sim_obj_free(view(ctx), SIM_PD, pd->handle, pd->serial);
}

static void var_geometry(struct sim_view *v, struct rs_var_info *var)
{
	var->length = v->page_size;
	var->mmap_off = v->var_area_off + (uint64_t)var->page_id * v->page_size;
}

static int sim_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var)
{
	struct sim_view *v = view(ctx);
	int status = sim_obj_alloc(v, SIM_VAR, flags, &var->handle, &var->serial,
				   &var->page_id);

	if (status)
		return status;
	var->flags = flags;
	var_geometry(v, var);
	/* A new VAR starts zeroed, whatever its page held before. */
	if (fallocate(ctx->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)var->mmap_off, var->length) < 0) {
		int err = errno;
		sim_obj_free(v, SIM_VAR, var->handle, var->serial);
		return rs_fail(RSHARE_E_IO, err, "cannot clear simulated VAR page %u",
			       var->page_id);
	}
	return RSHARE_OK;
}

static int sim_var_export(struct rs_ctx *ctx, struct rs_var_info *var)
{
	(void)ctx;
	var->priv_len = 0; /* the blob's fields say it all */
	return RSHARE_OK;
}

static int sim_var_import(struct rs_ctx *ctx, struct rs_var_info *var)
{
	struct sim_view *v = view(ctx);
	struct rs_var_info want = *var;
	uint32_t page;
	int status = sim_obj_lookup(v, SIM_VAR, var->handle, var->serial, &page);

	if (status)
		return status;
	want.page_id = page;
	var_geometry(v, &want);
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
	return sim_obj_free(view(ctx), SIM_VAR, var->handle, var->serial);
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
};
