/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Shared by the hardware provider's files (device, PD, VAR). */
#ifndef RSHARE_HW_INTERNAL_H
#define RSHARE_HW_INTERNAL_H

#include <pthread.h>
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

/* A VAR this context has seen (allocated or imported), by its offset: the
 * VAR that lives there as far as this context knows (hw_var_seen.c). */
struct rs_hw_seen {
	uint64_t mmap_off;
	uint64_t serial;   /* the VAR's nonce (its blob's serial), 0 if unknown */
	uint32_t page_id;
	uint32_t refs;     /* handles of this context on it */
	bool live;         /* false: this context freed it, nothing seen there since */
	bool used;
};
#define RS_HW_SEEN_MAX 64

/* What the hardware provider keeps per context (rs_ctx.prov). */
struct rs_hw_ctx {
	struct ibv_context *ib;
	struct ibv_pd *sentinel; /* the table's identity PD, if this context made it */
	bool mlx5;               /* an mlx5 device, with libmlx5 loaded */
	/* The provider implements import (mlx5 only; every other provider has
	 * libibverbs' dummy ops, which answer EOPNOTSUPP). */
	bool can_import;
	uint64_t max_dm_size;    /* ibv_query_device_ex; 0: no device memory */
	pthread_mutex_t lock;    /* guards seen */
	struct rs_hw_seen seen[RS_HW_SEEN_MAX];
};

/* The ibv_context behind an rs_ctx of this provider. */
static inline struct ibv_context *rs_hw_ibctx(const struct rs_ctx *ctx)
{
	return ((struct rs_hw_ctx *)ctx->prov)->ib;
}

static inline struct rs_hw_ctx *rs_hw_ctx(const struct rs_ctx *ctx)
{
	return ctx->prov;
}

/* hw_identity.c: what can be verified about objects on hardware. */

/* The mlx5 PD number of pd (mlx5dv_init_obj, MLX5_1.2); false when it
 * cannot be known (not mlx5, or libmlx5 lacks the call). */
bool rs_hw_pdn(const struct rs_ctx *ctx, struct ibv_pd *pd, uint32_t *pdn);
/* The table id of a context just opened (allocates the sentinel PD) or
 * imported (reads the sentinel: one ibv_import_pd + unimport). Sets
 * ctx->table_id, 0 when it cannot be known. Never fails. */
void rs_hw_table_open(struct rs_ctx *ctx);
void rs_hw_table_import(struct rs_ctx *ctx);
/* Release the sentinel's local state (the kernel object stays with the
 * ufile, for every other context that shares it). */
void rs_hw_table_close(struct rs_ctx *ctx);

/* hw_var_seen.c: the VARs this context has seen. A handle of this context
 * on var came (live), went locally (unimport), or destroyed it (freed).
 * check: RSHARE_OK, or RSHARE_E_NOT_FOUND with the cause recorded for a
 * VAR this context knows to be gone or replaced at that offset. */
void rs_hw_seen_live(const struct rs_ctx *ctx, const struct rs_var_info *var);
void rs_hw_seen_unimport(const struct rs_ctx *ctx, const struct rs_var_info *var);
void rs_hw_seen_freed(const struct rs_ctx *ctx, const struct rs_var_info *var);
int rs_hw_seen_check(const struct rs_ctx *ctx, const struct rs_var_info *var,
		     const char *what);
/* A fresh nonzero nonce for a new VAR. */
uint64_t rs_hw_var_nonce(void);

/* hw_pd.c */
int rs_hw_pd_alloc(struct rs_ctx *ctx, struct rs_pd_info *pd);
int rs_hw_pd_import(struct rs_ctx *ctx, struct rs_pd_info *pd);
void rs_hw_pd_unimport(struct rs_ctx *ctx, struct rs_pd_info *pd);
int rs_hw_pd_dealloc(struct rs_ctx *ctx, struct rs_pd_info *pd);

/* hw_mr.c */
int rs_hw_mr_reg(struct rs_ctx *ctx, struct rs_pd_info *pd, void *addr, uint64_t length,
		 uint32_t access, struct rs_mr_info *mr);
int rs_hw_mr_import(struct rs_ctx *ctx, struct rs_pd_info *pd, struct rs_mr_info *mr);
void rs_hw_mr_unimport(struct rs_ctx *ctx, struct rs_mr_info *mr);
int rs_hw_mr_dereg(struct rs_ctx *ctx, struct rs_mr_info *mr);

/* hw_dm.c. The device's max_dm_size (query_device_ex op; 0 when the
 * provider has no such op or no on-chip memory). supported: the provider
 * has the alloc_dm op and the device some memory for it. */
uint64_t rs_hw_max_dm_size(struct ibv_context *ib);
bool rs_hw_dm_supported(const struct rs_ctx *ctx);
int rs_hw_dm_alloc(struct rs_ctx *ctx, uint64_t length, struct rs_dm_info *dm);
int rs_hw_dm_import(struct rs_ctx *ctx, struct rs_dm_info *dm);
void rs_hw_dm_unimport(struct rs_ctx *ctx, struct rs_dm_info *dm);
int rs_hw_dm_free(struct rs_ctx *ctx, struct rs_dm_info *dm);
int rs_hw_dm_write(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset,
		   const void *src, size_t len);
int rs_hw_dm_read(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, void *dst,
		  size_t len);
/* Map: mlx5's own mapping of the DM (mlx5dv_init_obj, MLX5DV_OBJ_DM);
 * mappable: this context can (an mlx5 device, libmlx5 with init_obj). */
int rs_hw_dm_map(struct rs_ctx *ctx, struct rs_dm_info *dm);
void rs_hw_dm_unmap(struct rs_ctx *ctx, struct rs_dm_info *dm);
bool rs_hw_dm_mappable(const struct rs_ctx *ctx);

/* hw_var.c */
int rs_hw_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var);
int rs_hw_var_export(struct rs_ctx *ctx, struct rs_var_info *var);
int rs_hw_var_import(struct rs_ctx *ctx, struct rs_var_info *var);
void rs_hw_var_unimport(struct rs_ctx *ctx, struct rs_var_info *var);
int rs_hw_var_free(struct rs_ctx *ctx, struct rs_var_info *var);

#endif
