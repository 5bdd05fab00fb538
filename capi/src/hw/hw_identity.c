/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Identity on hardware: what rshare can verify about a kernel object that a
 * blob names, given that handles are reused lowest-free and rdma-core offers
 * no way to name a context's object table (docs/hardware.md, "What is
 * verified on import").
 *
 * Table: a context that rshare opens allocates one PD first, the sentinel,
 * which on a fresh ufile always gets handle 0. Its handle and mlx5 PD number
 * (unique on the device while it lives), with the command device's st_rdev,
 * are the table id. A context imported from the fd reads the sentinel back
 * (import PD 0, read its number, unimport) and so knows the same id; blobs
 * carry it, and the core refuses a blob of another table (another context
 * of the same device) with RSHARE_E_DEVICE_MISMATCH.
 *
 * Layout of a hardware table id (abi/BLOB-FORMAT.md):
 *   bits 63..56  0x48 ('H')
 *   bits 55..40  st_rdev of the command fd, low 16 bits (0 if not a char device)
 *   bits 39..24  the sentinel's handle, low 16 bits
 *   bits 23..0   the sentinel's PD number (24 bits on mlx5)
 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "hw/hw_internal.h"

#define TABLE_TAG 0x48ULL
#define SENTINEL_HANDLE 0u

bool rs_hw_pdn(const struct rs_ctx *ctx, struct ibv_pd *pd, uint32_t *pdn)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct mlx5dv_pd dvpd = { 0 };
	struct mlx5dv_obj obj = { 0 };

	if (!rs_hw_ctx(ctx)->mlx5 || !v->init_obj)
		return false;
	obj.pd.in = pd;
	obj.pd.out = &dvpd;
	if (v->init_obj(&obj, MLX5DV_OBJ_PD) != 0)
		return false;
	*pdn = dvpd.pdn;
	return true;
}

static uint64_t table_id(const struct rs_ctx *ctx, uint32_t handle, uint32_t pdn)
{
	struct stat st;
	uint64_t rdev = 0;

	if (fstat(ctx->fd, &st) == 0 && S_ISCHR(st.st_mode))
		rdev = ((uint64_t)major(st.st_rdev) << 8 | minor(st.st_rdev)) & 0xffff;
	return TABLE_TAG << 56 | rdev << 40 | (uint64_t)(handle & 0xffff) << 24 |
	       (pdn & 0xffffff);
}

void rs_hw_table_open(struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct ibv_pd *pd;
	uint32_t pdn;

	ctx->table_id = 0;
	/* Without PD import nobody could read it back, and without a PD
	 * number it would name nothing: then the table stays unknowable. */
	if (!hw->mlx5 || !v->init_obj || !v->import_pd || !v->unimport_pd)
		return;
	pd = v->alloc_pd(hw->ib);
	if (!pd)
		return;
	if (pd->handle != SENTINEL_HANDLE || !rs_hw_pdn(ctx, pd, &pdn)) {
		v->dealloc_pd(pd); /* not a fresh table: no sentinel */
		return;
	}
	hw->sentinel = pd;
	ctx->table_id = table_id(ctx, pd->handle, pdn);
}

void rs_hw_table_import(struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct ibv_pd *pd;
	uint32_t pdn;
	int saved = errno;

	ctx->table_id = 0;
	if (!hw->mlx5 || !v->init_obj || !v->import_pd || !v->unimport_pd)
		return;
	/* A context that rshare did not open may have no PD 0 (or another
	 * kind of object there): its table is then unknowable. */
	pd = v->import_pd(hw->ib, SENTINEL_HANDLE);
	if (pd) {
		if (rs_hw_pdn(ctx, pd, &pdn))
			ctx->table_id = table_id(ctx, SENTINEL_HANDLE, pdn);
		v->unimport_pd(pd);
	}
	errno = saved;
}

void rs_hw_table_close(struct rs_ctx *ctx)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);

	if (hw->sentinel)
		rs_hw_verbs()->unimport_pd(hw->sentinel);
	hw->sentinel = NULL;
}
