/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sim0's memory regions, on the simulated table.
 *
 * MR: the table records its PD (handle and serial), address, length,
 * access and a key byte; lkey = rkey = handle << 8 | key, as mlx5 builds an
 * mkey from its index and a variant byte, so a reused handle gets another
 * key. A PD with a live MR cannot be freed (pd_dealloc answers BUSY from the
 * PD's MR count). mr_import: NOT_FOUND if the table has no such MR,
 * BLOB_CORRUPT if its attributes differ from the blob's, DEVICE_MISMATCH if
 * it is registered on another PD than the one given. Like the kernel's
 * reg_mr the registration is bookkeeping: nothing is pinned or checked in
 * the registering process's address space.
 *
 * Untrusted-memory rule (sim_table.h): shared memory is read only through
 * sim_find/sim_lookup (validated copies), each read once.
 */
#include <errno.h>

#include "provider.h"
#include "sim/sim_kinds.h"
#include "sim/sim_table.h"
#include "util/error.h"

static uint32_t mkey(uint32_t handle, uint32_t key)
{
	return handle << 8 | (key & 0xff);
}

int sim_mr_reg(struct rs_ctx *ctx, struct rs_pd_info *pd, void *addr, uint64_t length,
	       uint32_t access, struct rs_mr_info *mr)
{
	struct sim_objv p, o = { .type = SIM_MR, .flags = access, .pd_handle = pd->handle,
				 .pd_serial = pd->serial, .addr = (uint64_t)(uintptr_t)addr,
				 .length = length };
	struct sim_table *t;
	uint32_t h = 0;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_PD, pd->handle, pd->serial, &p);
	if (!status)
		status = sim_create(t, &o, &h);
	sim_unlock(ctx->prov);
	if (status)
		return status;
	*mr = (struct rs_mr_info){ .handle = h, .serial = o.serial, .pd_handle = pd->handle,
				   .addr = o.addr, .length = length, .lkey = mkey(h, o.key),
				   .rkey = mkey(h, o.key), .access = access };
	return RSHARE_OK;
}

int sim_mr_import(struct rs_ctx *ctx, struct rs_pd_info *pd, struct rs_mr_info *mr)
{
	struct sim_objv o;
	int status = sim_lookup(ctx->prov, ctx->fd, SIM_MR, mr->handle, mr->serial, &o);

	if (status)
		return status;
	if (o.pd_handle != mr->pd_handle || o.addr != mr->addr || o.length != mr->length ||
	    mkey(mr->handle, o.key) != mr->lkey || mkey(mr->handle, o.key) != mr->rkey ||
	    o.flags != mr->access)
		return rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
			       "blob's MR attributes (PD %u, %llu bytes at 0x%llx, keys "
			       "0x%x/0x%x, access 0x%x) do not match the table's MR %u",
			       mr->pd_handle, (unsigned long long)mr->length,
			       (unsigned long long)mr->addr, mr->lkey, mr->rkey, mr->access,
			       mr->handle);
	if (o.pd_handle != pd->handle || o.pd_serial != pd->serial)
		return rs_fail(RSHARE_E_DEVICE_MISMATCH, 0,
			       "MR %u is registered on PD %u, not on the given PD %u",
			       mr->handle, o.pd_handle, pd->handle);
	return RSHARE_OK;
}

void sim_mr_unimport(struct rs_ctx *ctx, struct rs_mr_info *mr)
{
	(void)ctx; (void)mr; /* local state only, as ibv_unimport_mr */
}

int sim_mr_dereg(struct rs_ctx *ctx, struct rs_mr_info *mr)
{
	return sim_ctx_destroy(ctx, SIM_MR, mr->handle, mr->serial);
}
