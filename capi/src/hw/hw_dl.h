/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdma-core, loaded at run time.
 *
 * librshare never links against libibverbs or libmlx5 (no DT_NEEDED): it
 * must load and serve the simulated device on hosts without rdma-core. The
 * two libraries are dlopen()ed once, on first use, and every function is
 * resolved by its ELF version node, so the pointer always has the ABI the
 * prototypes below describe (libibverbs keeps IBVERBS_1.0 compat variants of
 * several of these names with an older struct layout).
 *
 * Environment (read once, with secure_getenv so set-uid programs ignore it):
 *   RSHARE_LIBIBVERBS  path of libibverbs.so.1 to load instead of the system's
 *   RSHARE_LIBMLX5     path of libmlx5.so.1 to load instead of the system's
 */
#ifndef RSHARE_HW_DL_H
#define RSHARE_HW_DL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

/* mlx5dv_alloc_var() flag; Debian 12's rdma-core 44 headers predate it. */
#define RS_MLX5DV_VAR_ALLOC_FLAG_TLP 1u

/* struct mlx5dv_export_sizes of rdma-core 63+ (MLX5_1.27), declared under our
 * own name so this builds against old and new headers alike. */
struct rs_mlx5dv_export_sizes {
	uint32_t var_attrs_size;
	uint32_t devx_umem_attrs_size;
	uint32_t devx_obj_attrs_size;
};
/* What rshare hands _mlx5dv_get_export_sizes: room for a grown struct. */
#define RS_MLX5_EXPORT_SIZES_ROOM 256

struct rs_hw_verbs {
	/* libibverbs: set when the library and every IBVERBS_1.1 symbol below
	 * resolved. Otherwise there is no hardware, and why says so. */
	bool verbs_ok;
	char why[256];

	/* IBVERBS_1.1 */
	struct ibv_device **(*get_device_list)(int *num_devices);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *device);
	__be64 (*get_device_guid)(struct ibv_device *device);
	struct ibv_context *(*open_device)(struct ibv_device *device);
	int (*close_device)(struct ibv_context *context);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	int (*dealloc_pd)(struct ibv_pd *pd);
	/* IBVERBS_1.10 (rdma-core 31+); NULL when absent */
	struct ibv_context *(*import_device)(int cmd_fd);
	struct ibv_pd *(*import_pd)(struct ibv_context *context, uint32_t pd_handle);
	void (*unimport_pd)(struct ibv_pd *pd);
	/* MRs: ibv_reg_mr is a macro in verbs.h since rdma-core 29 (over the
	 * exported ibv_reg_mr@IBVERBS_1.1 and ibv_reg_mr_iova2@IBVERBS_1.8);
	 * the plain function, IBVERBS_1.1, is in every rdma-core. */
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
	int (*dereg_mr)(struct ibv_mr *mr);                           /* IBVERBS_1.1 */
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle); /* 1.10 */
	void (*unimport_mr)(struct ibv_mr *mr);                       /* IBVERBS_1.10 */
	/* Device memory: ibv_alloc_dm/free_dm/memcpy_*_dm are static inlines
	 * over the context's ops (hw_dm.c); only sharing is exported. */
	struct ibv_dm *(*import_dm)(struct ibv_context *context, uint32_t dm_handle); /* 1.13 */
	void (*unimport_dm)(struct ibv_dm *dm);                       /* IBVERBS_1.13 */

	/* libmlx5: set when the library, MLX5_1.8 and MLX5_1.12 resolved. */
	bool mlx5_ok;
	char mlx5_why[256];
	/* MLX5_1.2: the PD number behind an ibv_pd, the mapping of a DM;
	 * NULL when absent. */
	int (*init_obj)(struct mlx5dv_obj *obj, uint64_t obj_type);
	bool (*is_supported)(struct ibv_device *device);             /* MLX5_1.8 */
	struct mlx5dv_var *(*alloc_var)(struct ibv_context *context,
					uint32_t flags);             /* MLX5_1.12 */
	void (*free_var)(struct mlx5dv_var *dv_var);                 /* MLX5_1.12 */

	/* MLX5_1.27 (rdma-core 63+): all four or none. */
	bool export_ok;
	const char *export_missing; /* first missing symbol when !export_ok */
	int (*var_export)(struct mlx5dv_var *dv_var, void *data);
	struct mlx5dv_var *(*var_import)(struct ibv_context *context, void *data);
	void (*var_unimport)(struct mlx5dv_var *dv_var);
	void (*get_export_sizes)(struct rs_mlx5dv_export_sizes *sizes,
				 size_t sizes_len);
};

/* The loaded table (loading it on the first call). Never NULL, never fails:
 * what is missing is described by the *_ok flags and why texts. Quiet: it
 * prints nothing, whatever is or is not installed. */
const struct rs_hw_verbs *rs_hw_verbs(void);

#endif
