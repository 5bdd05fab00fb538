/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* sim0's MR and DM operations (sim_mem.c), for the provider table. */
#ifndef RSHARE_SIM_MEM_H
#define RSHARE_SIM_MEM_H

#include "provider.h"

uint32_t sim_caps(struct rs_ctx *ctx);
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
