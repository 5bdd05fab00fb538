/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Protection domains through rdma-core: ibv_alloc_pd/ibv_dealloc_pd
 * (IBVERBS_1.1), ibv_import_pd/ibv_unimport_pd (IBVERBS_1.10).
 *
 * Identity: a PD's serial is its mlx5 PD number + 1, compared after every
 * import (hw_identity.c reads the number); on devices other than mlx5 it is
 * 0 and the kernel alone decides whether a handle names a PD.
 */
#include <errno.h>

#include "hw/hw_internal.h"
#include "util/error.h"

/* A PD's serial on hardware: its mlx5 PD number + 1 (0: cannot be known).
 * The kernel hands PD numbers out device-wide, so a handle reused for
 * another PD usually comes with another number. */
static uint64_t pd_serial(const struct rs_ctx *ctx, struct ibv_pd *pd)
{
	uint32_t pdn;

	return rs_hw_pdn(ctx, pd, &pdn) ? (uint64_t)pdn + 1 : 0;
}

int rs_hw_pd_alloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct ibv_pd *ibpd;
	int err;

	errno = 0;
	ibpd = rs_hw_verbs()->alloc_pd(rs_hw_ibctx(ctx));
	if (!ibpd) {
		err = errno;
		return rs_hw_fail(err, false, NULL, "ibv_alloc_pd on %s failed", ctx->name);
	}
	pd->handle = ibpd->handle;
	pd->serial = pd_serial(ctx, ibpd);
	pd->prov = ibpd;
	return RSHARE_OK;
}

int rs_hw_pd_import(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_pd *ibpd;
	int err;

	if (!v->import_pd)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "the loaded libibverbs lacks ibv_import_pd@IBVERBS_1.10 "
			       "(rdma-core 31 or newer is needed)");
	errno = 0;
	ibpd = v->import_pd(rs_hw_ibctx(ctx), pd->handle);
	if (!ibpd) {
		err = errno;
		return rs_hw_fail(err, true, "PD import (the PD query method)",
				  "ibv_import_pd(handle %u) on %s failed", pd->handle,
				  ctx->name);
	}
	/* The kernel found a PD under the handle; is it the blob's? */
	if (pd->serial) {
		uint64_t got = pd_serial(ctx, ibpd);

		if (got != pd->serial) {
			v->unimport_pd(ibpd);
			if (!got)
				return rs_fail(RSHARE_E_NOT_FOUND, 0,
					       "PD handle %u on %s: its PD number cannot be "
					       "read back (mlx5dv_init_obj), so the PD the blob "
					       "names (number %llu) cannot be told from another",
					       pd->handle, ctx->name,
					       (unsigned long long)pd->serial - 1);
			return rs_fail(RSHARE_E_NOT_FOUND, 0,
				       "PD handle %u on %s now names PD number %llu, the blob's "
				       "was %llu: that PD was freed and its handle reused",
				       pd->handle, ctx->name, (unsigned long long)got - 1,
				       (unsigned long long)pd->serial - 1);
		}
	}
	pd->prov = ibpd;
	return RSHARE_OK;
}

void rs_hw_pd_unimport(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	(void)ctx;
	/* ibv_unimport_pd came with ibv_import_pd (rdma-core 31). Before that
	 * no PD can have been imported, and an allocated one has no local-only
	 * release: its few bytes of local state are left to the process. */
	if (v->unimport_pd)
		v->unimport_pd(pd->prov);
	pd->prov = NULL;
}

int rs_hw_pd_dealloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	/* ibv_dealloc_pd returns an errno value and keeps the local object on
	 * failure, so a failed free leaves a PD that unimport can release. */
	int err = rs_hw_verbs()->dealloc_pd(pd->prov);

	if (err)
		return rs_hw_fail(err, true, NULL, "ibv_dealloc_pd(handle %u) on %s failed",
				  pd->handle, ctx->name);
	pd->prov = NULL;
	return RSHARE_OK;
}
