/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Identity on hardware: what rshare can verify about a kernel object that a
 * blob names, given that handles are reused lowest-free and rdma-core offers
 * no way to name a context's object table (docs/hardware.md, "Checking
 * levels").
 *
 * Table: a context that rshare opens allocates one PD at once, the
 * sentinel. Its handle is whatever the kernel gives: mlx5 has already
 * taken the lowest ones for its own objects (mlx5_set_context allocates a
 * UAR on every open and import), so it is never assumed to be 0. Its
 * handle and mlx5 PD number (unique on the device while it lives), with
 * the command device's st_rdev, are the table id.
 *
 * The opener also makes the context's ledger (core/ledger.h) and records
 * the sentinel in it. A context imported with the ledger reads the
 * sentinel's handle there and verifies it with the kernel (import that PD,
 * compare its number); a ledger that does not match is dropped. A context
 * imported from a bare fd has no ledger: it takes the lowest PD among the
 * first RS_HW_PROBE handles, which is the sentinel in a table rshare
 * opened (made right after the provider's own objects). Either way the
 * importer knows the opener's table id; blobs carry it, and the core
 * refuses a blob of another table (another context of the same device)
 * with RSHARE_E_DEVICE_MISMATCH.
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
#include <unistd.h>

#include "core/ledger.h"
#include "hw/hw_internal.h"
#include "util/fdutil.h"

#define TABLE_TAG 0x48ULL
/* Handles a bare-fd import looks through for the sentinel: mlx5 makes one
 * UAR per open or import before any user object can exist. */
#define RS_HW_PROBE 8u

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

/* Can this context name its table at all? Without PD import nobody could
 * read the sentinel back, and without a PD number it would name nothing. */
static bool identifiable(const struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	return rs_hw_ctx(ctx)->mlx5 && v->init_obj && v->import_pd && v->unimport_pd;
}

void rs_hw_table_open(struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct ibv_pd *pd;
	uint32_t pdn;

	ctx->table_id = 0;
	if (!identifiable(ctx))
		return;
	pd = v->alloc_pd(hw->ib);
	if (!pd)
		return;
	if (!rs_hw_pdn(ctx, pd, &pdn)) {
		v->dealloc_pd(pd);
		return;
	}
	hw->sentinel = pd;
	ctx->table_id = table_id(ctx, pd->handle, pdn);
	/* No ledger (no memfd) only lowers the checking level. */
	if (rs_ledger_create(ctx->guid, pd->handle, pdn, &ctx->ledger) != RSHARE_OK)
		ctx->ledger = NULL;
}

/* The PD number of the PD at handle, if there is one. */
static bool pd_at(struct rs_ctx *ctx, uint32_t handle, uint32_t *pdn)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_pd *pd = v->import_pd(rs_hw_ibctx(ctx), handle);
	bool ok;

	if (!pd)
		return false;
	ok = rs_hw_pdn(ctx, pd, pdn);
	v->unimport_pd(pd);
	return ok;
}

void rs_hw_table_import(struct rs_ctx *ctx)
{
	struct rs_ledger *l = NULL;
	uint32_t anchor, want, pdn;
	int saved = errno;

	ctx->table_id = 0;
	if (ctx->ledger_in >= 0 && identifiable(ctx))
		l = rs_ledger_adopt(ctx->ledger_in, ctx->guid);
	else if (ctx->ledger_in >= 0)
		rs_close_untrusted(ctx->ledger_in);
	ctx->ledger_in = -1;
	if (l) {
		/* The ledger is untrusted: its sentinel must be this table's. */
		rs_ledger_anchor(l, &anchor, &want);
		if (pd_at(ctx, anchor, &pdn) && pdn == want) {
			ctx->table_id = table_id(ctx, anchor, pdn);
			ctx->ledger = l;
			errno = saved;
			return;
		}
		rs_ledger_close(l);
	}
	if (identifiable(ctx)) {
		for (anchor = 0; anchor < RS_HW_PROBE; anchor++) {
			if (pd_at(ctx, anchor, &pdn)) {
				ctx->table_id = table_id(ctx, anchor, pdn);
				break;
			}
		}
	}
	errno = saved;
}

void rs_hw_table_close(struct rs_ctx *ctx)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);

	if (hw->sentinel)
		rs_hw_verbs()->unimport_pd(hw->sentinel);
	hw->sentinel = NULL;
	rs_ledger_close(ctx->ledger);
	ctx->ledger = NULL;
}
