/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory regions through rdma-core: ibv_reg_mr@IBVERBS_1.1 (the function
 * that verbs.h's ibv_reg_mr macro calls for the access flags rshare knows),
 * ibv_dereg_mr@IBVERBS_1.1, ibv_import_mr/ibv_unimport_mr@IBVERBS_1.10.
 *
 * Identity: ibv_import_mr asks the kernel, which answers with the MR's
 * lkey, rkey and length. A deregistered MR's handle is reused lowest-free,
 * but an mlx5 mkey carries a variant byte that changes with every
 * registration, so comparing the keys with the blob's catches the reuse.
 */
#include <errno.h>
#include <inttypes.h>

#include "hw/hw_internal.h"
#include "util/error.h"

static int need_mr(const struct rs_ctx *ctx, bool sharing)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	if (!v->reg_mr || !v->dereg_mr)
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "the loaded libibverbs lacks ibv_reg_mr/ibv_dereg_mr@IBVERBS_1.1");
	if (sharing && (!v->import_mr || !v->unimport_mr))
		return rs_fail(RSHARE_E_UNSUPPORTED, 0,
			       "cannot share memory regions on %s: the loaded libibverbs "
			       "lacks ibv_import_mr@IBVERBS_1.10 (rdma-core 31 or newer)",
			       ctx->name);
	return RSHARE_OK;
}

int rs_hw_mr_reg(struct rs_ctx *ctx, struct rs_pd_info *pd, void *addr, uint64_t length,
		 uint32_t access, struct rs_mr_info *mr)
{
	struct ibv_mr *ibmr;
	int status = need_mr(ctx, false), err;

	if (status)
		return status;
	if (length > SIZE_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "MR length %" PRIu64 " does not fit size_t",
			       length);
	errno = 0;
	ibmr = rs_hw_verbs()->reg_mr(pd->prov, addr, (size_t)length, (int)access);
	if (!ibmr) {
		err = errno;
		if (err == EINVAL || err == EFAULT)
			return rs_fail(RSHARE_E_INVAL, err,
				       "ibv_reg_mr(%" PRIu64 " bytes, access 0x%x) on PD %u of %s: "
				       "the kernel refused the range or the access flags (remote "
				       "write and atomic need local write)", length, access,
				       pd->handle, ctx->name);
		return rs_hw_fail(err, false, NULL,
				  "ibv_reg_mr(%" PRIu64 " bytes, access 0x%x) on PD %u of %s failed",
				  length, access, pd->handle, ctx->name);
	}
	*mr = (struct rs_mr_info){
		.handle = ibmr->handle, .serial = 0, .pd_handle = pd->handle,
		.addr = (uintptr_t)addr, .length = ibmr->length, .lkey = ibmr->lkey,
		.rkey = ibmr->rkey, .access = access, .prov = ibmr,
	};
	return RSHARE_OK;
}

int rs_hw_mr_import(struct rs_ctx *ctx, struct rs_pd_info *pd, struct rs_mr_info *mr)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_mr *ibmr;
	int status = need_mr(ctx, true), err;

	if (status)
		return status;
	errno = 0;
	ibmr = v->import_mr(pd->prov, mr->handle);
	if (!ibmr) {
		err = errno;
		return rs_hw_fail(err, true, "MR import (the MR query method)",
				  "ibv_import_mr(handle %u) on %s failed", mr->handle, ctx->name);
	}
	/* The kernel found an MR under the handle; is it the blob's? */
	if (ibmr->lkey != mr->lkey || ibmr->rkey != mr->rkey || ibmr->length != mr->length) {
		uint32_t lkey = ibmr->lkey, rkey = ibmr->rkey;
		uint64_t len = ibmr->length;

		v->unimport_mr(ibmr);
		return rs_fail(RSHARE_E_NOT_FOUND, 0,
			       "MR handle %u on %s now names an MR with lkey 0x%x, rkey 0x%x, "
			       "%" PRIu64 " bytes; the blob's has lkey 0x%x, rkey 0x%x, %" PRIu64
			       " bytes: that MR was deregistered and its handle reused",
			       mr->handle, ctx->name, lkey, rkey, len, mr->lkey, mr->rkey,
			       mr->length);
	}
	/* ibmr->addr is NULL (the address is the registering process's); the
	 * blob's address is kept, as rshare_mr_attrs documents. */
	mr->prov = ibmr;
	return RSHARE_OK;
}

void rs_hw_mr_unimport(struct rs_ctx *ctx, struct rs_mr_info *mr)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();

	(void)ctx;
	/* Before rdma-core 31 no MR can have been imported, and a registered
	 * one has no local-only release: its bytes are left to the process. */
	if (v->unimport_mr)
		v->unimport_mr(mr->prov);
	mr->prov = NULL;
}

int rs_hw_mr_dereg(struct rs_ctx *ctx, struct rs_mr_info *mr)
{
	/* Returns an errno value and keeps the local object on failure. */
	int err = rs_hw_verbs()->dereg_mr(mr->prov);

	if (err)
		return rs_hw_fail(err, true, NULL, "ibv_dereg_mr(handle %u) on %s failed",
				  mr->handle, ctx->name);
	mr->prov = NULL;
	return RSHARE_OK;
}
