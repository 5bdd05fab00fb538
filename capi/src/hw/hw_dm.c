/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Device memory through rdma-core. ibv_alloc_dm, ibv_free_dm,
 * ibv_memcpy_to_dm and ibv_memcpy_from_dm are not exported symbols: they
 * are static inlines in verbs.h that call the provider through the
 * context's struct verbs_context ops (alloc_dm, free_dm) and the DM's own
 * memcpy pointers. rshare calls those inlines as compiled from the headers
 * it is built with. That is rdma-core's supported ABI, not a guess at its
 * internals: verbs_context only grows at its front (away from the embedded
 * ibv_context), every context records its size, and the inline checks that
 * the op is inside it and set (verbs_get_ctx_op), answering EOPNOTSUPP
 * otherwise. Sharing is ibv_import_dm/ibv_unimport_dm@IBVERBS_1.13.
 *
 * Identity: ibv_import_dm asks the kernel whether the handle names a DM,
 * but struct ibv_dm shows no length or other attribute to compare, so a DM
 * freed and its handle reused by another DM cannot be told apart. The
 * provider checks copies against its own idea of the DM's length (mlx5:
 * EFAULT), whatever length the blob claims, and mlx5 copies only 4-byte
 * aligned offsets and lengths (EINVAL otherwise): both become INVAL.
 *
 * Mapping (rshare_dm_map). mlx5 maps every MEMIC DM into the process
 * itself, MAP_SHARED through the context's cmd_fd, both when it allocates
 * it (upstream providers/mlx5/verbs.c alloc_dm_memic -> dm_mmap) and when
 * it imports it (mlx5_import_dm asks the kernel for the DM's page and
 * offset, MLX5_IB_METHOD_DM_QUERY, then dm_mmap): that mapping is what its
 * own ibv_memcpy_to/from_dm load and store through. mlx5dv_init_obj
 * (MLX5DV_OBJ_DM, providers/mlx5/mlx5.c mlx5dv_get_dm) hands it out as
 * struct mlx5dv_dm's buf and length, so rshare maps nothing itself: the
 * mapping lives as long as the ibv_dm (ibv_free_dm and ibv_unimport_dm
 * unmap it) and unmapping it in rshare only forgets the address. Every
 * process that shares the context maps the same device pages.
 * mlx5dv_dm_map_op_addr (MLX5_1.19, pyverbs' Mlx5DmOpAddr) is not that: it
 * maps a page where an access performs a device operation on the DM (an
 * atomic increment, a test-and-set; the op is device-specific), not plain
 * loads and stores of its bytes. The mapping is device BAR memory: the
 * device serves it in 4-byte words (upstream copies through it with 32-bit
 * accesses), so callers should too.
 */
#include <errno.h>
#include <inttypes.h>

#include "hw/hw_internal.h"
#include "util/error.h"

uint64_t rs_hw_max_dm_size(struct ibv_context *ib)
{
	/* The op itself, not verbs.h's ibv_query_device_ex inline: that one
	 * falls back to the exported ibv_query_device, which librshare must
	 * not link against (it resolves rdma-core at run time). */
	struct verbs_context *vctx = verbs_get_ctx_op(ib, query_device_ex);
	struct ibv_device_attr_ex attr = { 0 };

	if (!vctx || vctx->query_device_ex(ib, NULL, &attr, sizeof(attr)) != 0)
		return 0;
	return attr.max_dm_size;
}

bool rs_hw_dm_supported(const struct rs_ctx *ctx)
{
	return verbs_get_ctx_op(rs_hw_ibctx(ctx), alloc_dm) != NULL &&
	       rs_hw_ctx(ctx)->max_dm_size > 0;
}

int rs_hw_dm_alloc(struct rs_ctx *ctx, uint64_t length, struct rs_dm_info *dm)
{
	struct ibv_alloc_dm_attr attr = { .length = (size_t)length };
	struct ibv_dm *ibdm;
	int err;

	if (length > SIZE_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "DM length %" PRIu64 " does not fit size_t",
			       length);
	/* mlx5 answers EINVAL for both; the cause is told apart here. */
	if (verbs_get_ctx_op(rs_hw_ibctx(ctx), alloc_dm) && rs_hw_ctx(ctx)->max_dm_size == 0)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "%s has no device memory: its max_dm_size is 0 (this function "
			       "has no on-chip memory, MEMIC)", ctx->name);
	if (length > rs_hw_ctx(ctx)->max_dm_size && rs_hw_ctx(ctx)->max_dm_size)
		return rs_fail(RSHARE_E_INVAL, 0,
			       "DM length %" PRIu64 " exceeds %s's max_dm_size of %" PRIu64
			       " bytes", length, ctx->name, rs_hw_ctx(ctx)->max_dm_size);
	errno = 0;
	ibdm = ibv_alloc_dm(rs_hw_ibctx(ctx), &attr);
	if (!ibdm) {
		err = errno;
		if (err == EINVAL)
			return rs_fail(RSHARE_E_INVAL, err,
				       "ibv_alloc_dm(%" PRIu64 " bytes) on %s: the device refuses "
				       "that size", length, ctx->name);
		return rs_hw_fail(err, false, "device memory",
				  "ibv_alloc_dm(%" PRIu64 " bytes) on %s failed", length,
				  ctx->name);
	}
	/* rdma-core 35+ reports the kernel handle; without it the DM could
	 * never be shared, which is what rshare is for. */
	if (!(ibdm->comp_mask & IBV_DM_MASK_HANDLE)) {
		ibv_free_dm(ibdm);
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "ibv_alloc_dm on %s gives no DM handle (rdma-core 35 or newer "
			       "is needed to share device memory)", ctx->name);
	}
	*dm = (struct rs_dm_info){ .handle = ibdm->handle, .serial = 0, .length = length,
				   .prov = ibdm };
	return RSHARE_OK;
}

int rs_hw_dm_import(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_dm *ibdm;
	int err;

	if (!v->import_dm || !v->unimport_dm)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "cannot share device memory on %s: the loaded libibverbs lacks "
			       "ibv_import_dm@IBVERBS_1.13 (rdma-core 35 or newer)", ctx->name);
	errno = 0;
	ibdm = v->import_dm(rs_hw_ibctx(ctx), dm->handle);
	if (!ibdm) {
		err = errno;
		return rs_hw_fail(err, true, "DM import (the DM query method)",
				  "ibv_import_dm(handle %u) on %s failed", dm->handle, ctx->name);
	}
	dm->prov = ibdm;
	return RSHARE_OK;
}

void rs_hw_dm_unimport(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	(void)ctx;
	/* Without ibv_unimport_dm (before rdma-core 35) nothing was imported,
	 * and an allocated DM has no local-only release. */
	if (v->unimport_dm)
		v->unimport_dm(dm->prov);
	dm->prov = NULL;
}

int rs_hw_dm_free(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	int err = ibv_free_dm(dm->prov);

	if (err)
		return rs_hw_fail(err, true, NULL, "ibv_free_dm(handle %u) on %s failed",
				  dm->handle, ctx->name);
	dm->prov = NULL;
	return RSHARE_OK;
}

static int copy_failed(const struct rs_ctx *ctx, const struct rs_dm_info *dm, int err,
		       const char *what, uint64_t offset, size_t len)
{
	if (err == EFAULT)
		return rs_fail(RSHARE_E_INVAL, err,
			       "%s of %zu bytes at offset %" PRIu64 " of DM handle %u on %s: "
			       "outside the device memory as the device knows it (the blob "
			       "claims %" PRIu64 " bytes)", what, len, offset, dm->handle,
			       ctx->name, dm->length);
	if (err == EINVAL)
		return rs_fail(RSHARE_E_INVAL, err,
			       "%s of %zu bytes at offset %" PRIu64 " of DM handle %u on %s: "
			       "the device reads and writes its memory in 4-byte words, so "
			       "offset and length must be multiples of 4 (mlx5)", what, len,
			       offset, dm->handle, ctx->name);
	return rs_hw_fail(err, false, NULL, "%s of %zu bytes at offset %" PRIu64
			  " of DM handle %u on %s failed", what, len, offset, dm->handle,
			  ctx->name);
}

int rs_hw_dm_write(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset,
		   const void *src, size_t len)
{
	int err = ibv_memcpy_to_dm(dm->prov, offset, src, len);

	return err ? copy_failed(ctx, dm, err, "ibv_memcpy_to_dm", offset, len) : RSHARE_OK;
}

int rs_hw_dm_read(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, void *dst,
		  size_t len)
{
	int err = ibv_memcpy_from_dm(dst, dm->prov, offset, len);

	return err ? copy_failed(ctx, dm, err, "ibv_memcpy_from_dm", offset, len) : RSHARE_OK;
}

/* The DM's own mapping, as mlx5 made it at alloc or import (see the top of
 * this file). UNSUPPORTED, naming the reason, where there is none. */
int rs_hw_dm_map(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct mlx5dv_dm out = { .comp_mask = 0 };
	struct mlx5dv_obj obj = { .dm = { .in = dm->prov, .out = &out } };
	int err;

	if (!rs_hw_ctx(ctx)->mlx5)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "cannot map device memory on %s: only mlx5 maps it into the "
			       "process (%s)", ctx->name,
			       v->mlx5_ok ? "this is not an mlx5 device" : v->mlx5_why);
	if (!v->init_obj)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "cannot map device memory on %s: the loaded libmlx5 lacks "
			       "mlx5dv_init_obj@MLX5_1.2", ctx->name);
	err = v->init_obj(&obj, MLX5DV_OBJ_DM);
	if (err)
		return rs_fail(RSHARE_E_UNSUPPORTED, err,
			       "cannot map device memory on %s: mlx5dv_init_obj(MLX5DV_OBJ_DM) "
			       "of DM handle %u failed", ctx->name, dm->handle);
	/* A libmlx5 older than the DM object (rdma-core 18) fills nothing. */
	if (!out.buf)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "cannot map device memory on %s: the loaded libmlx5 gives no "
			       "mapping of DM handle %u (mlx5dv_init_obj knows no DM before "
			       "rdma-core 18)", ctx->name, dm->handle);
	/* The device's length, not the blob's, bounds the mapping: a shorter
	 * one would let callers run past it. */
	if (out.length < dm->length)
		return rs_fail(RSHARE_E_INVAL, 0,
			       "DM handle %u on %s is %" PRIu64 " bytes as the device knows it, "
			       "but the blob claims %" PRIu64, dm->handle, ctx->name,
			       (uint64_t)out.length, dm->length);
	dm->map = out.buf;
	dm->map_first = dm->map_count = 0;
	return RSHARE_OK;
}

void rs_hw_dm_unmap(struct rs_ctx *ctx, struct rs_dm_info *dm)
{
	(void)ctx;
	dm->map = NULL; /* the provider's mapping: it goes with the ibv_dm */
}

bool rs_hw_dm_mappable(const struct rs_ctx *ctx)
{
	return rs_hw_ctx(ctx)->mlx5 && rs_hw_verbs()->init_obj && rs_hw_dm_supported(ctx);
}
