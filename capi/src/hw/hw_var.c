/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mlx5 VARs through libmlx5 (mlx5dv). Allocation needs MLX5_1.12; sharing
 * needs the export API of rdma-core 63+ (MLX5_1.27).
 *
 * A hardware VAR blob carries upstream's mlx5dv_var_export() record, byte
 * for byte, in the blob's private bytes: that record is the only form in
 * which libmlx5 accepts a VAR back. rshare's blob adds what the record lacks
 * (device GUID, kind, version, checksum), and the attributes it repeats are
 * compared with what libmlx5 made of the record on import.
 *
 * libmlx5 trusts the record (mlx5dv_var_import asks the kernel nothing) and
 * asserts that a destroy succeeds (_mlx5dv_free_var), so both import and
 * free first check that the VAR is still there (check_alive).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "hw/hw_internal.h"
#include "util/error.h"

/* The device must be an mlx5 one: mlx5dv calls on another provider's context
 * would read it as an mlx5 context. */
static int need_mlx5(const struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	if (!v->mlx5_ok)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "VARs need libmlx5.so.1 with mlx5dv_alloc_var@MLX5_1.12 (%s)",
			       v->mlx5_why);
	if (!v->is_supported(rs_hw_ibctx(ctx)->device))
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "device %s is not an mlx5 device: it has no VARs",
			       ctx->name);
	return RSHARE_OK;
}

/* Sharing also needs MLX5_1.27 and a record that fits a blob; *size (if
 * size is not NULL) is the record size of the loaded libmlx5. */
static int need_export(const struct rs_ctx *ctx, const char *what, uint32_t *size)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	/* _mlx5dv_get_export_sizes writes its whole struct whatever size it
	 * is told, and a newer libmlx5's struct may be larger than ours:
	 * hand it a zeroed buffer with room to spare. */
	union {
		struct rs_mlx5dv_export_sizes sizes;
		uint8_t room[RS_MLX5_EXPORT_SIZES_ROOM];
	} buf = { .room = { 0 } };
	struct rs_mlx5dv_export_sizes sizes;
	int status = need_mlx5(ctx);

	if (status)
		return status;
	if (!v->export_ok)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "cannot %s a hardware VAR: the loaded libmlx5.so.1 lacks "
			       "the VAR export API (no %s@MLX5_1.27); sharing VARs needs "
			       "rdma-core 63 or newer", what, v->export_missing);
	v->get_export_sizes(&buf.sizes, sizeof(buf));
	sizes = buf.sizes;
	if (sizes.var_attrs_size == 0 || sizes.var_attrs_size > RS_PRIV_MAX)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "libmlx5's VAR export record is %u bytes; an rshare blob "
			       "carries 1 to %d", sizes.var_attrs_size, RS_PRIV_MAX);
	if (size)
		*size = sizes.var_attrs_size;
	return RSHARE_OK;
}

static void fill_attrs(struct rs_var_info *var, const struct mlx5dv_var *dv)
{
	var->page_id = dv->page_id;
	var->length = dv->length;
	var->mmap_off = (uint64_t)dv->mmap_off;
}

/* Does the VAR's offset still map? 0, or the errno of the failed mmap
 * (EINVAL: the kernel has no such entry: the VAR was destroyed). */
static int probe(const struct rs_ctx *ctx, const struct rs_var_info *var)
{
	void *p = mmap(NULL, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->fd,
		       (off_t)var->mmap_off);

	if (p == MAP_FAILED)
		return errno ? errno : EIO;
	munmap(p, var->length);
	return 0;
}

/*
 * Is the VAR the blob (or handle) names still the one at its offset? What
 * can be known without a kernel VAR query: this context's own record of
 * the VARs it has seen there (hw_var_seen.c), then the kernel's mmap entry
 * (a destroyed VAR's offset answers EINVAL). A VAR freed elsewhere whose
 * offset was then handed to a new VAR cannot be told from it here; with a
 * ledger the core refused such a blob before (its offset's serial moved
 * on: core/object.c check_ledger).
 */
static int check_alive(const struct rs_ctx *ctx, const struct rs_var_info *var,
		       const char *what)
{
	int status = rs_hw_seen_check(ctx, var, what), err;

	if (status)
		return status;
	err = probe(ctx, var);
	if (err == EINVAL)
		return rs_fail(RSHARE_E_NOT_FOUND, err,
			       "cannot %s VAR page %u on %s: the kernel has no mapping at "
			       "offset 0x%llx any more, so the VAR was freed%s", what,
			       var->page_id, ctx->name, (unsigned long long)var->mmap_off,
			       strcmp(what, "free") == 0
				       ? " (by another process?); unimport it instead" : "");
	if (err)
		return rs_hw_fail(err, false, NULL,
				  "cannot %s VAR page %u on %s: its page does not map", what,
				  var->page_id, ctx->name);
	return RSHARE_OK;
}

int rs_hw_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var)
{
	struct mlx5dv_var *dv;
	uint32_t dvflags = 0;
	int status = need_mlx5(ctx), err;

	if (status)
		return status;
	if (flags & RSHARE_VAR_FLAG_TLP)
		dvflags |= RS_MLX5DV_VAR_ALLOC_FLAG_TLP;
	errno = 0;
	dv = rs_hw_verbs()->alloc_var(rs_hw_ibctx(ctx), dvflags);
	if (!dv) {
		err = errno;
		return rs_hw_fail(err, false,
				  dvflags ? "VARs with the TLP flag" : "VARs (the mlx5 VAR object)",
				  "mlx5dv_alloc_var(flags 0x%x) on %s failed", dvflags,
				  ctx->name);
	}
	/* The kernel handle is private to libmlx5 (it travels inside the
	 * export record), so the blob's own handle stays 0; its serial is a
	 * nonce that tells this VAR from others at its offset later. */
	var->handle = 0;
	var->serial = rs_hw_var_nonce();
	var->flags = flags;
	fill_attrs(var, dv);
	var->priv_len = 0;
	var->prov = dv;
	rs_hw_seen_live(ctx, var);
	return RSHARE_OK;
}

int rs_hw_var_export(struct rs_ctx *ctx, struct rs_var_info *var)
{
	uint8_t record[RS_PRIV_MAX] = { 0 };
	uint32_t size;
	int status = need_export(ctx, "export", &size), err;

	if (status)
		return status;
	err = rs_hw_verbs()->var_export(var->prov, record);
	if (err)
		return rs_hw_fail(err, false, NULL, "mlx5dv_var_export(page %u) failed",
				  var->page_id);
	memcpy(var->priv, record, size);
	var->priv_len = (uint16_t)size;
	return RSHARE_OK;
}

int rs_hw_var_import(struct rs_ctx *ctx, struct rs_var_info *var)
{
	/* Zero-padded to the importer's record size: a record written by an
	 * rdma-core with a shorter layout is never read past its end. */
	uint8_t record[RS_PRIV_MAX] = { 0 };
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct mlx5dv_var *dv;
	int status = need_export(ctx, "import", NULL), err;

	if (status)
		return status;
	if (var->priv_len == 0 || var->priv_len > RS_PRIV_MAX)
		return rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
			       "the VAR blob carries no mlx5dv_var_export record "
			       "(%u private bytes): it was not made by a hardware device",
			       var->priv_len);
	memcpy(record, var->priv, var->priv_len);
	errno = 0;
	dv = v->var_import(rs_hw_ibctx(ctx), record);
	if (!dv) {
		err = errno;
		return rs_hw_fail(err, true, NULL, "mlx5dv_var_import(page %u) on %s failed",
				  var->page_id, ctx->name);
	}
	if (dv->page_id != var->page_id || dv->length != var->length ||
	    (uint64_t)dv->mmap_off != var->mmap_off) {
		struct rs_var_info got;
		fill_attrs(&got, dv);
		v->var_unimport(dv);
		return rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
			       "the VAR blob says page %u, %u bytes at 0x%llx but its "
			       "mlx5 record gives page %u, %u bytes at 0x%llx",
			       var->page_id, var->length,
			       (unsigned long long)var->mmap_off, got.page_id,
			       got.length, (unsigned long long)got.mmap_off);
	}
	/* mlx5dv_var_import() took the record on trust; check what can be. */
	status = check_alive(ctx, var, "import");
	if (status) {
		v->var_unimport(dv);
		return status;
	}
	rs_hw_seen_live(ctx, var);
	var->prov = dv;
	return RSHARE_OK;
}

void rs_hw_var_unimport(struct rs_ctx *ctx, struct rs_var_info *var)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	/* Before rdma-core 63 nothing releases a VAR's local state without
	 * destroying the kernel object; no VAR can have been imported then, and
	 * an allocated one released locally leaves its few bytes behind. */
	if (v->var_unimport)
		v->var_unimport(var->prov);
	rs_hw_seen_unimport(ctx, var);
	var->prov = NULL;
}

/* Serialises VAR frees in this process, so that of two handles on one VAR
 * (say an allocated one and an imported copy) freed at once by two
 * threads, the second always sees the first's destroy. */
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;

int rs_hw_var_free(struct rs_ctx *ctx, struct rs_var_info *var)
{
	int status;

	/* _mlx5dv_free_var() asserts that the destroy succeeds: a VAR that is
	 * already gone (freed by another process, or the device removed) would
	 * abort the whole process. So first make sure it is still there; only
	 * a destroy by another process racing with this one can still get
	 * past (docs/hardware.md). */
	pthread_mutex_lock(&free_lock);
	status = check_alive(ctx, var, "free");
	if (!status)
		rs_hw_verbs()->free_var(var->prov);
	pthread_mutex_unlock(&free_lock);
	if (status)
		return status;
	rs_hw_seen_freed(ctx, var);
	var->prov = NULL;
	return RSHARE_OK;
}
