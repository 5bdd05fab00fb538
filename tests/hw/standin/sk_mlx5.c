/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Stand-in libmlx5.so.1: mlx5dv_is_supported and the VAR calls, with
 * rdma-core's signatures and symbol versions. Built twice:
 *   standin/      as rdma-core 63+: with the MLX5_1.27 VAR export API
 *   standin-44/   with -DSK_RDMA_CORE_44: without it, as Debian 12's v44
 *
 * VAR export/import follow mlx5dv_var_export(3): the record is the
 * provider's private attributes (kernel handle, page, length, offset), sized
 * by mlx5dv_get_export_sizes(); import rebuilds the VAR from it without
 * asking the kernel, and unimport releases only local memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "sk_kernel.h"

#if !defined(SK_RDMA_CORE_44) && !defined(SK_HEADERS_HAVE_VAR_EXPORT)
/* rdma-core 63's declarations, absent from older system headers. */
struct mlx5dv_export_sizes {
	uint32_t var_attrs_size;
	uint32_t devx_umem_attrs_size;
	uint32_t devx_obj_attrs_size;
};
int mlx5dv_var_export(struct mlx5dv_var *dv_var, void *data);
struct mlx5dv_var *mlx5dv_var_import(struct ibv_context *context, void *data);
void mlx5dv_var_unimport(struct mlx5dv_var *dv_var);
void _mlx5dv_get_export_sizes(struct mlx5dv_export_sizes *sizes, size_t sizes_len);
#endif

#define SK_VAR_FLAG_TLP 1u /* MLX5DV_VAR_ALLOC_FLAG_TLP */

struct sk_var {
	struct mlx5dv_var dv; /* first: callers get &dv */
	struct ibv_context *ctx;
	uint32_t handle;
};

bool mlx5dv_is_supported(struct ibv_device *device)
{
	return sk_device_known(device) && ((struct sk_device *)device)->mlx5;
}

/* MLX5_1.2. The stand-in fills PDs (their PD number, which mlx5's
 * ibv_import_pd got from the kernel) and DMs (upstream providers/mlx5/mlx5.c
 * mlx5dv_get_dm: buf is the provider's mapping of the DM, start_va, and
 * length its length, for an allocated and an imported DM alike); other
 * kinds are not modelled. */
int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	if (obj_type == MLX5DV_OBJ_DM) {
		struct sk_dm *d = (struct sk_dm *)obj->dm.in;

		if (!mlx5dv_is_supported(obj->dm.in->context->device))
			return EOPNOTSUPP;
		obj->dm.out->buf = d->start_va;
		obj->dm.out->length = d->length;
		obj->dm.out->comp_mask = 0;
		return 0;
	}
	if (obj_type != MLX5DV_OBJ_PD)
		return EOPNOTSUPP;
	if (!mlx5dv_is_supported(obj->pd.in->context->device))
		return EOPNOTSUPP;
	obj->pd.out->pdn = ((struct sk_pd *)obj->pd.in)->pdn;
	obj->pd.out->comp_mask = 0;
	return 0;
}

static struct mlx5dv_var *new_var(struct ibv_context *ctx, uint32_t handle,
				  uint32_t page_id, uint32_t length, off_t mmap_off)
{
	struct sk_var *v = calloc(1, sizeof(*v));

	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	v->ctx = ctx;
	v->handle = handle;
	v->dv.page_id = page_id;
	v->dv.length = length;
	v->dv.mmap_off = mmap_off;
	return &v->dv;
}

/* Flags this libmlx5 passes to the kernel: none before the TLP flag. */
#ifdef SK_RDMA_CORE_44
#define SK_VAR_FLAGS_KNOWN 0u
#else
#define SK_VAR_FLAGS_KNOWN SK_VAR_FLAG_TLP
#endif

struct mlx5dv_var *mlx5dv_alloc_var(struct ibv_context *context, uint32_t flags)
{
	struct sk_obj_info info = { 0 };
	struct mlx5dv_var *dv;
	uint32_t handle;
	int err;

	if (!mlx5dv_is_supported(context->device) || (flags & ~SK_VAR_FLAGS_KNOWN)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* A kernel or device without the VAR object: the ioctl names an
	 * unknown object, answered with EPROTONOSUPPORT. */
	if (sk_env(SK_ENV_NO_VAR_SUPPORT)) {
		errno = sk_check_alive() ?: EPROTONOSUPPORT;
		return NULL;
	}
	err = sk_obj_create(context, SK_VAR, &info, &handle);
	if (err) {
		errno = err;
		return NULL;
	}
	dv = new_var(context, handle, info.page_id, SK_PAGE, (off_t)SK_ENTRY_OFF(info.entry));
	if (!dv)
		sk_obj_destroy(context, SK_VAR, handle);
	return dv;
}

void mlx5dv_free_var(struct mlx5dv_var *dv_var)
{
	struct sk_var *v = (struct sk_var *)dv_var;

	/* Upstream asserts that the destroy ioctl succeeded: a VAR destroyed
	 * elsewhere, or a disassociated device, aborts the process in builds
	 * without NDEBUG (rdma-core's own build.sh). */
	if (sk_obj_destroy(v->ctx, SK_VAR, v->handle) != 0) {
		fprintf(stderr, "stand-in libmlx5: mlx5dv_free_var: destroy failed: "
			"assert(false) as upstream\n");
		abort();
	}
	free(v);
}

#ifndef SK_RDMA_CORE_44

/* The export record: this stand-in provider's private layout. */
struct sk_var_record {
	uint32_t handle;
	uint32_t page_id;
	uint32_t length;
	uint32_t reserved;
	uint64_t mmap_off;
};

void _mlx5dv_get_export_sizes(struct mlx5dv_export_sizes *sizes, size_t sizes_len)
{
	/* Upstream (providers/mlx5/verbs.c, _mlx5dv_get_export_sizes) zeroes
	 * sizes_len bytes and then writes every field of its own struct,
	 * whatever sizes_len is. STANDIN_EXPORT_SIZES_GROWN plays a newer
	 * libmlx5 whose struct has grown a field: a caller that gave less room
	 * would be written past its buffer, which the stand-in turns into an
	 * abort so that a test sees it in every build. */
	size_t own = sk_env(SK_ENV_EXPORT_SIZES_GROWN) ? 4 * sizeof(uint32_t) : sizeof(*sizes);

	if (sizes_len < own) {
		fprintf(stderr, "stand-in libmlx5: _mlx5dv_get_export_sizes given %zu bytes, "
			"writes %zu (upstream would overrun the caller)\n", sizes_len, own);
		abort();
	}
	memset(sizes, 0, sizes_len);
	sizes->var_attrs_size = sizeof(struct sk_var_record);
	/* No DEVX objects in the stand-in: their sizes stay 0, and so does
	 * the grown field. */
}

int mlx5dv_var_export(struct mlx5dv_var *dv_var, void *data)
{
	struct sk_var *v = (struct sk_var *)dv_var;
	struct sk_var_record rec = {
		.handle = v->handle,
		.page_id = dv_var->page_id,
		.length = dv_var->length,
		.mmap_off = (uint64_t)dv_var->mmap_off,
	};

	memcpy(data, &rec, sizeof(rec));
	return 0;
}

struct mlx5dv_var *mlx5dv_var_import(struct ibv_context *context, void *data)
{
	struct sk_var_record rec;

	/* Upstream makes no kernel call: whatever the record says is taken. */
	if (!mlx5dv_is_supported(context->device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	sk_import_pause();
	memcpy(&rec, data, sizeof(rec));
	return new_var(context, rec.handle, rec.page_id, rec.length,
		       (off_t)rec.mmap_off);
}

void mlx5dv_var_unimport(struct mlx5dv_var *dv_var)
{
	free(dv_var); /* local only; dv is the first member */
}

#endif /* !SK_RDMA_CORE_44 */
