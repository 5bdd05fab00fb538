/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sim0's protection domains on the simulated table: a PD is a table object;
 * one with live MRs cannot be freed (its MR count, kept by sim_table.c).
 *
 * Untrusted-memory rule (sim_table.h): shared memory is read only through
 * sim_find/sim_lookup (validated copies), each read once.
 */
#include <errno.h>

#include "provider.h"
#include "sim/sim_kinds.h"
#include "sim/sim_table.h"
#include "util/error.h"

int sim_pd_alloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct sim_objv o = { .type = SIM_PD };
	struct sim_table *t;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_create(t, &o, &pd->handle);
	sim_ctx_unlock(ctx);
	if (!status)
		pd->serial = o.serial;
	return status;
}

int sim_pd_import(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct sim_objv o;

	return sim_lookup(ctx->prov, ctx->fd, SIM_PD, pd->handle, pd->serial, &o);
}

void sim_pd_unimport(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	(void)ctx; (void)pd; /* local state only, as ibv_unimport_pd */
}

int sim_pd_dealloc(struct rs_ctx *ctx, struct rs_pd_info *pd)
{
	struct sim_objv o;
	struct sim_table *t;
	int status = sim_ctx_lock(ctx, &t);

	if (status)
		return status;
	status = sim_find(t, SIM_PD, pd->handle, pd->serial, &o);
	if (!status && o.mr_count)
		status = rs_fail(RSHARE_E_BUSY, EBUSY,
				 "PD %u still has %u memory region(s) registered; "
				 "deregister them first", pd->handle, o.mr_count);
	if (!status)
		sim_destroy(t, pd->handle, &o);
	sim_ctx_unlock(ctx);
	return status;
}
