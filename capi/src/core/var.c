/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* mlx5 VARs: the PD life cycle plus attributes and the page mapping. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "blob.h"
#include "internal.h"
#include "util/error.h"

static int var_alloc(struct rs_obj *obj, const void *args)
{
	memset(&obj->u.var.info, 0, sizeof(obj->u.var.info));
	atomic_init(&obj->u.var.addr, NULL);
	return obj->dev->ctx.ops->var_alloc(&obj->dev->ctx, *(const uint32_t *)args,
					    &obj->u.var.info);
}

static int var_import(struct rs_obj *obj, const struct rs_blob *b)
{
	rs_var_from_blob(&obj->u.var.info, b);
	atomic_init(&obj->u.var.addr, NULL);
	return obj->dev->ctx.ops->var_import(&obj->dev->ctx, &obj->u.var.info);
}

static void var_unimport(struct rs_obj *obj)
{
	obj->dev->ctx.ops->var_unimport(&obj->dev->ctx, &obj->u.var.info);
}

static int var_destroy(struct rs_obj *obj)
{
	return obj->dev->ctx.ops->var_free(&obj->dev->ctx, &obj->u.var.info);
}

/* Through the provider when it wants to know (sim0), else directly. */
static void unmap_page(struct rs_obj *obj, void *addr)
{
	struct rs_ctx *ctx = &obj->dev->ctx;

	if (ctx->ops->var_unmap)
		ctx->ops->var_unmap(ctx, &obj->u.var.info, addr);
	else
		munmap(addr, obj->u.var.info.length);
}

static int map_page(struct rs_obj *obj, void **addr)
{
	const struct rs_var_info *info = &obj->u.var.info;
	struct rs_ctx *ctx = &obj->dev->ctx;

	if (ctx->ops->var_map)
		return ctx->ops->var_map(ctx, info, addr);
	*addr = mmap(NULL, info->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->fd,
		     (off_t)info->mmap_off);
	if (*addr == MAP_FAILED)
		return rs_fail(RSHARE_E_IO, errno,
			       "mmap of VAR page %u (%u bytes at offset 0x%llx) failed",
			       info->page_id, info->length, (unsigned long long)info->mmap_off);
	return RSHARE_OK;
}

static void var_unmap(struct rs_obj *obj)
{
	void *addr = atomic_load_explicit(&obj->u.var.addr, memory_order_acquire);

	/* Unmapped (the common case on release): no locked operation. */
	if (addr && atomic_compare_exchange_strong(&obj->u.var.addr, &addr, NULL))
		unmap_page(obj, addr);
}

/* The provider adds what its importer needs (hardware: the rdma-core
 * export record) to a copy; the object itself is not changed. */
static int var_to_blob(const struct rs_obj *obj, struct rs_blob *b)
{
	struct rs_var_info info = obj->u.var.info;
	int status = obj->dev->ctx.ops->var_export(&obj->dev->ctx, &info);

	if (!status)
		rs_blob_from_var(b, &obj->dev->ctx, &info);
	return status;
}

static uint32_t var_handle(const struct rs_obj *obj)
{
	return obj->u.var.info.handle;
}

static void *var_native(const struct rs_obj *obj)
{
	return obj->u.var.info.prov;
}

static const struct rs_obj_ops var_ops = {
	RS_OPS_KIND(VAR),
	.alloc = var_alloc, .import = var_import, .unimport = var_unimport,
	.destroy = var_destroy, .unmap = var_unmap, .to_blob = var_to_blob,
	.handle = var_handle, .native = var_native,
};

int rshare_var_alloc(rshare_device *dev, uint32_t flags, rshare_var **out)
{
	if (flags & ~(uint32_t)RSHARE_VAR_FLAG_TLP)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "unknown VAR flags 0x%x",
				  flags & ~(uint32_t)RSHARE_VAR_FLAG_TLP));
	RS_RETURN(rs_obj_alloc(dev, &var_ops, &flags, (void **)out));
}

int rshare_var_export(const rshare_var *var, void *buf, size_t cap, size_t *len)
{
	RS_RETURN(rs_obj_export(var, &var_ops, buf, cap, len));
}

int rshare_var_import(rshare_device *dev, const void *blob, size_t len, rshare_var **out)
{
	RS_RETURN(rs_obj_import(dev, &var_ops, blob, len, (void **)out));
}

int rshare_var_unimport(rshare_var *var)
{
	RS_RETURN(rs_obj_release(var, &var_ops, false));
}

int rshare_var_free(rshare_var *var)
{
	RS_RETURN(rs_obj_release(var, &var_ops, true));
}

int rshare_var_handle(const rshare_var *var, uint32_t *handle)
{
	RS_RETURN(rs_obj_handle(var, &var_ops, handle));
}

int rshare_var_native(const rshare_var *var, void **mlx5dv_var)
{
	RS_RETURN(rs_obj_native(var, &var_ops, mlx5dv_var));
}

int rshare_var_attrs(const rshare_var *var, uint32_t *page_id, uint32_t *length,
		     uint64_t *mmap_off)
{
	struct rs_var_info *info;
	struct rs_slot *slot;
	int status = rs_pin(var, RS_OBJ_VAR, &slot);

	if (status)
		RS_RETURN(status);
	info = &slot->u.obj.u.var.info;
	if (page_id)
		*page_id = info->page_id;
	if (length)
		*length = info->length;
	if (mmap_off)
		*mmap_off = info->mmap_off;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_var_map(rshare_var *var, void **addr)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	void *mine, *cur;
	int status;

	if (!addr)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "addr is NULL"));
	status = rs_pin(var, RS_OBJ_VAR, &slot);
	if (status)
		RS_RETURN(status);
	obj = &slot->u.obj;
	cur = atomic_load(&obj->u.var.addr);
	if (!cur) {
		status = map_page(obj, &mine);
		if (status) {
			rs_unpin(slot);
			RS_RETURN(status);
		}
		/* Two threads may map at once: one mapping wins, the other goes. */
		if (atomic_compare_exchange_strong(&obj->u.var.addr, &cur, mine))
			cur = mine;
		else
			unmap_page(obj, mine);
	}
	*addr = cur;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_var_unmap(rshare_var *var)
{
	struct rs_slot *slot;
	int status = rs_pin(var, RS_OBJ_VAR, &slot);

	if (status)
		RS_RETURN(status);
	var_unmap(&slot->u.obj);
	rs_unpin(slot);
	return RSHARE_OK;
}
