/* Shared by the hardware provider's files (device, PD, VAR). */
#ifndef RSHARE_HW_INTERNAL_H
#define RSHARE_HW_INTERNAL_H

#include "hw/hw_dl.h"
#include "provider.h"

/* The status for an rdma-core errno: ENOMEM -> NOMEM, EOPNOTSUPP/ENOSYS ->
 * UNSUPPORTED, EPERM/EACCES -> PERM, EBUSY -> BUSY, anything else -> IO. */
int rs_hw_status(int err);

/* Same, for calls that name an existing object by its kernel handle:
 * EINVAL/ENOENT there mean "no such object" -> NOT_FOUND. */
int rs_hw_lookup_status(int err);

/* The ibv_context behind an rs_ctx of this provider. */
static inline struct ibv_context *rs_hw_ibctx(const struct rs_ctx *ctx)
{
	return ctx->prov;
}

int rs_hw_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var);
int rs_hw_var_export(struct rs_ctx *ctx, struct rs_var_info *var);
int rs_hw_var_import(struct rs_ctx *ctx, struct rs_var_info *var);
void rs_hw_var_unimport(struct rs_ctx *ctx, struct rs_var_info *var);
int rs_hw_var_free(struct rs_ctx *ctx, struct rs_var_info *var);

#endif
