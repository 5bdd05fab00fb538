/* Shared by the hardware provider's files (device, PD, VAR). */
#ifndef RSHARE_HW_INTERNAL_H
#define RSHARE_HW_INTERNAL_H

#include <stdbool.h>

#include "hw/hw_dl.h"
#include "provider.h"

/* The status for an rdma-core errno: ENOMEM/ENOSPC -> NOMEM,
 * EOPNOTSUPP/EPROTONOSUPPORT/ENOSYS -> UNSUPPORTED, EPERM/EACCES -> PERM,
 * EBUSY -> BUSY, anything else (EIO: device disassociated) -> IO. */
int rs_hw_status(int err);

/* Same, for calls that name an existing object by its kernel handle:
 * EINVAL/ENOENT there mean "no such object" -> NOT_FOUND. */
int rs_hw_lookup_status(int err);

/* Record a failure of an rdma-core call that set err: the status as above
 * (lookup: as rs_hw_lookup_status), the message fmt followed by what err
 * means (EPROTONOSUPPORT: "the device or its kernel driver lacks <lacks>";
 * EIO: the device was removed or reset; ...). lacks may be NULL. */
int rs_hw_fail(int err, bool lookup, const char *lacks, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

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
