/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* sim0's operations, one file per kind (sim_pd.c, sim_var.c, sim_mr.c,
 * sim_dm.c), for the provider table (sim_provider.c), and what they share:
 * the table lock taken through a context. */
#ifndef RSHARE_SIM_KINDS_H
#define RSHARE_SIM_KINDS_H

#include "provider.h"

struct sim_table;

/* The table lock through ctx (sim_lock.c's rules): *t the mapped table.
 * RSHARE_OK, or a failure recorded. */
int sim_ctx_lock(struct rs_ctx *ctx, struct sim_table **t);
void sim_ctx_unlock(struct rs_ctx *ctx);
/* Destroy the object of type named by (handle, serial) under the lock;
 * NOT_FOUND (recorded) if the table has none. */
int sim_ctx_destroy(struct rs_ctx *ctx, uint32_t type, uint32_t handle, uint64_t serial);

int sim_pd_alloc(struct rs_ctx *ctx, struct rs_pd_info *pd);
int sim_pd_import(struct rs_ctx *ctx, struct rs_pd_info *pd);
void sim_pd_unimport(struct rs_ctx *ctx, struct rs_pd_info *pd);
int sim_pd_dealloc(struct rs_ctx *ctx, struct rs_pd_info *pd);

int sim_var_alloc(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var);
int sim_var_export(struct rs_ctx *ctx, struct rs_var_info *var);
int sim_var_import(struct rs_ctx *ctx, struct rs_var_info *var);
void sim_var_unimport(struct rs_ctx *ctx, struct rs_var_info *var);
int sim_var_free(struct rs_ctx *ctx, struct rs_var_info *var);
int sim_var_map(struct rs_ctx *ctx, const struct rs_var_info *var, void **addr);
void sim_var_unmap(struct rs_ctx *ctx, const struct rs_var_info *var, void *addr);

int sim_mr_reg(struct rs_ctx *ctx, struct rs_pd_info *pd, void *addr, uint64_t length,
	       uint32_t access, struct rs_mr_info *mr);
int sim_mr_import(struct rs_ctx *ctx, struct rs_pd_info *pd, struct rs_mr_info *mr);
void sim_mr_unimport(struct rs_ctx *ctx, struct rs_mr_info *mr);
int sim_mr_dereg(struct rs_ctx *ctx, struct rs_mr_info *mr);

int sim_dm_alloc(struct rs_ctx *ctx, uint64_t length, struct rs_dm_info *dm);
int sim_dm_import(struct rs_ctx *ctx, struct rs_dm_info *dm);
void sim_dm_unimport(struct rs_ctx *ctx, struct rs_dm_info *dm);
int sim_dm_free(struct rs_ctx *ctx, struct rs_dm_info *dm);
int sim_dm_map(struct rs_ctx *ctx, struct rs_dm_info *dm);
void sim_dm_unmap(struct rs_ctx *ctx, struct rs_dm_info *dm);
int sim_dm_write(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, const void *src,
		 size_t len);
int sim_dm_read(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, void *dst,
		size_t len);

#endif
