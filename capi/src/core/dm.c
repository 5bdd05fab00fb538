/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device memory: allocated on a device, shared as rdma-core's
 * ibv_import_dm does, read and written through the provider (on hardware
 * the memory is not mapped into the process). */
#include <inttypes.h>

#include "blob.h"
#include "internal.h"
#include "util/error.h"

static int dm_alloc(struct rs_obj *obj, const void *args)
{
	struct rs_ctx *ctx = &obj->dev->ctx;

	obj->u.dm = (struct rs_dm_info){ 0 };
	if (!ctx->ops->dm_alloc)
		return rs_unsupported(ctx, "allocate device memory");
	return ctx->ops->dm_alloc(ctx, *(const uint64_t *)args, &obj->u.dm);
}

static int dm_import(struct rs_obj *obj, const struct rs_blob *b)
{
	struct rs_ctx *ctx = &obj->dev->ctx;

	obj->u.dm = (struct rs_dm_info){ .handle = b->handle, .serial = b->serial,
					 .length = b->length };
	if (!ctx->ops->dm_import)
		return rs_unsupported(ctx, "import device memory");
	return ctx->ops->dm_import(ctx, &obj->u.dm);
}

static void dm_unimport(struct rs_obj *obj)
{
	obj->dev->ctx.ops->dm_unimport(&obj->dev->ctx, &obj->u.dm);
}

static int dm_destroy(struct rs_obj *obj)
{
	return obj->dev->ctx.ops->dm_free(&obj->dev->ctx, &obj->u.dm);
}

static int dm_to_blob(const struct rs_obj *obj, struct rs_blob *b)
{
	b->handle = obj->u.dm.handle;
	b->serial = obj->u.dm.serial;
	b->length = obj->u.dm.length;
	return RSHARE_OK;
}

static uint32_t dm_handle(const struct rs_obj *obj)
{
	return obj->u.dm.handle;
}

static void *dm_native(const struct rs_obj *obj)
{
	return obj->u.dm.prov;
}

/* obj's DM as the provider maps it: the fields fixed while the DM lives.
 * Threads map and unmap it at once, so map, map_first and map_count are
 * only ever accessed atomically (a struct copy would read them plainly). */
static struct rs_dm_info dm_fixed(const struct rs_obj *obj)
{
	const struct rs_dm_info *d = &obj->u.dm;

	return (struct rs_dm_info){ .handle = d->handle, .serial = d->serial,
				    .length = d->length, .prov = d->prov };
}

/* Drop this process's mapping, if any (the one taken atomically: a
 * concurrent rshare_dm_unmap unmaps it once). */
static void dm_unmap_op(struct rs_obj *obj)
{
	struct rs_dm_info info;

	/* A plain load first: releasing an unmapped DM takes no locked step. */
	if (!__atomic_load_n(&obj->u.dm.map, __ATOMIC_ACQUIRE))
		return;
	info = dm_fixed(obj);
	info.map = __atomic_exchange_n(&obj->u.dm.map, NULL, __ATOMIC_ACQ_REL);
	if (!info.map)
		return;
	/* Stored before the map taken here was published (the exchange
	 * acquires them); any later mapper of this DM stores the same. */
	info.map_first = __atomic_load_n(&obj->u.dm.map_first, __ATOMIC_RELAXED);
	info.map_count = __atomic_load_n(&obj->u.dm.map_count, __ATOMIC_RELAXED);
	obj->dev->ctx.ops->dm_unmap(&obj->dev->ctx, &info);
}

static const struct rs_obj_ops dm_ops = {
	RS_OPS_KIND(DM),
	.alloc = dm_alloc, .import = dm_import, .unimport = dm_unimport,
	.destroy = dm_destroy, .unmap = dm_unmap_op, .to_blob = dm_to_blob, .handle = dm_handle,
	.native = dm_native,
};

int rshare_dm_alloc(rshare_device *dev, uint64_t length, rshare_dm **out)
{
	if (length == 0)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "length is 0"));
	RS_RETURN(rs_obj_alloc(dev, &dm_ops, &length, (void **)out));
}

int rshare_dm_export(const rshare_dm *dm, void *buf, size_t cap, size_t *len)
{
	RS_RETURN(rs_obj_export(dm, &dm_ops, buf, cap, len));
}

int rshare_dm_import(rshare_device *dev, const void *blob, size_t len, rshare_dm **out)
{
	RS_RETURN(rs_obj_import(dev, &dm_ops, blob, len, (void **)out));
}

int rshare_dm_unimport(rshare_dm *dm)
{
	RS_RETURN(rs_obj_release(dm, &dm_ops, false));
}

int rshare_dm_free(rshare_dm *dm)
{
	RS_RETURN(rs_obj_release(dm, &dm_ops, true));
}

int rshare_dm_length(const rshare_dm *dm, uint64_t *length)
{
	struct rs_slot *slot;
	int status;

	if (!length)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "length is NULL"));
	status = rs_pin(dm, RS_OBJ_DM, &slot);
	if (status)
		RS_RETURN(status);
	*length = slot->u.obj.u.dm.length;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_dm_handle(const rshare_dm *dm, uint32_t *handle)
{
	RS_RETURN(rs_obj_handle(dm, &dm_ops, handle));
}

int rshare_dm_native(const rshare_dm *dm, void **ibv_dm)
{
	RS_RETURN(rs_obj_native(dm, &dm_ops, ibv_dm));
}

/* Pin dm and check that [offset, offset + len) lies inside it, without
 * overflow: offset <= length and len <= length - offset. */
static int dm_range(const rshare_dm *dm, uint64_t offset, const void *p, size_t len,
		    struct rs_slot **slot)
{
	uint64_t length;
	int status;

	if (!p && len)
		return rs_fail(RSHARE_E_INVAL, 0, "buffer is NULL");
	status = rs_pin(dm, RS_OBJ_DM, slot);
	if (status)
		return status;
	length = (*slot)->u.obj.u.dm.length;
	if (offset > length || len > length - offset) {
		rs_unpin(*slot);
		return rs_fail(RSHARE_E_INVAL, 0,
			       "range of %zu bytes at offset %" PRIu64 " is past the end of "
			       "%" PRIu64 " bytes of device memory", len, offset, length);
	}
	return RSHARE_OK;
}

int rshare_dm_write(rshare_dm *dm, uint64_t offset, const void *src, size_t len)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	int status = dm_range(dm, offset, src, len, &slot);

	if (status)
		RS_RETURN(status);
	obj = &slot->u.obj;
	if (len == 0)
		status = RSHARE_OK;
	else if (!obj->dev->ctx.ops->dm_write)
		status = rs_unsupported(&obj->dev->ctx, "write device memory");
	else
		status = obj->dev->ctx.ops->dm_write(&obj->dev->ctx, &obj->u.dm, offset, src, len);
	rs_unpin(slot);
	RS_RETURN(status);
}

int rshare_dm_read(rshare_dm *dm, uint64_t offset, void *dst, size_t len)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	int status = dm_range(dm, offset, dst, len, &slot);

	if (status)
		RS_RETURN(status);
	obj = &slot->u.obj;
	if (len == 0)
		status = RSHARE_OK;
	else if (!obj->dev->ctx.ops->dm_read)
		status = rs_unsupported(&obj->dev->ctx, "read device memory");
	else
		status = obj->dev->ctx.ops->dm_read(&obj->dev->ctx, &obj->u.dm, offset, dst, len);
	rs_unpin(slot);
	RS_RETURN(status);
}

int rshare_dm_map(rshare_dm *dm, void **addr)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	struct rs_dm_info info;
	void *none = NULL;
	int status;

	if (!addr)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "addr is NULL"));
	status = rs_pin(dm, RS_OBJ_DM, &slot);
	if (status)
		RS_RETURN(status);
	obj = &slot->u.obj;
	info = dm_fixed(obj);
	info.map = __atomic_load_n(&obj->u.dm.map, __ATOMIC_ACQUIRE);
	if (!info.map && !obj->dev->ctx.ops->dm_map) {
		status = rs_unsupported(&obj->dev->ctx, "map device memory");
	} else if (!info.map && !(status = obj->dev->ctx.ops->dm_map(&obj->dev->ctx, &info))) {
		/* Another thread may have mapped it meanwhile: one mapping stays.
		 * What unmapping needs goes before the mapping is published
		 * (the same values from every mapper of this DM). */
		__atomic_store_n(&obj->u.dm.map_first, info.map_first, __ATOMIC_RELAXED);
		__atomic_store_n(&obj->u.dm.map_count, info.map_count, __ATOMIC_RELAXED);
		if (!__atomic_compare_exchange_n(&obj->u.dm.map, &none, info.map, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			obj->dev->ctx.ops->dm_unmap(&obj->dev->ctx, &info);
			info.map = none;
		}
	}
	if (!status)
		*addr = info.map;
	rs_unpin(slot);
	RS_RETURN(status);
}

int rshare_dm_unmap(rshare_dm *dm)
{
	struct rs_slot *slot;
	int status = rs_pin(dm, RS_OBJ_DM, &slot);

	if (status)
		RS_RETURN(status);
	dm_unmap_op(&slot->u.obj);
	rs_unpin(slot);
	return RSHARE_OK;
}
