/* Protection domains: the life cycle of rdma-core's PD sharing
 * (alloc, export, import, unimport, dealloc) over the provider table. */
#include <errno.h>

#include "blob.h"
#include "internal.h"
#include "util/error.h"

/* Register a provider PD as a new handle; undoes the provider side on failure. */
static int publish_pd(struct rs_slot *dev_slot, struct rs_pd_info *info,
		      bool imported, rshare_pd **out)
{
	struct rs_device *dev = dev_slot->u.dev;
	struct rs_slot *slot;
	int status = rs_slot_reserve(&slot);

	if (status) {
		if (imported)
			dev->ctx.ops->pd_unimport(&dev->ctx, info);
		else
			dev->ctx.ops->pd_dealloc(&dev->ctx, info);
		return status;
	}
	slot->u.pd.dev = dev;
	slot->u.pd.info = *info;
	slot->u.pd.imported = imported;
	atomic_fetch_add(&dev->children, 1);
	*out = rs_slot_publish(slot, RS_OBJ_PD);
	return RSHARE_OK;
}

int rshare_pd_alloc(rshare_device *dev, rshare_pd **out)
{
	struct rs_pd_info info = { 0 };
	struct rs_slot *ds;
	int status;

	if (!out)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "out is NULL"));
	status = rs_pin(dev, RS_OBJ_DEVICE, &ds);
	if (status)
		RS_RETURN(status);
	status = ds->u.dev->ctx.ops->pd_alloc(&ds->u.dev->ctx, &info);
	if (!status)
		status = publish_pd(ds, &info, false, out);
	rs_unpin(ds);
	RS_RETURN(status);
}

int rshare_pd_export(const rshare_pd *pd, void *buf, size_t cap, size_t *len)
{
	uint8_t raw[RSHARE_BLOB_MAX];
	struct rs_blob b;
	struct rs_slot *slot;
	size_t n;
	int status;

	if (!len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is NULL"));
	status = rs_pin(pd, RS_OBJ_PD, &slot);
	if (status)
		RS_RETURN(status);
	rs_blob_init(&b, RSHARE_KIND_PD, &slot->u.pd.dev->ctx);
	b.handle = slot->u.pd.info.handle;
	b.serial = slot->u.pd.info.serial;
	rs_unpin(slot);
	n = rs_blob_encode(&b, raw);
	RS_RETURN(rs_copy_out(raw, n, buf, cap, len));
}

int rshare_pd_import(rshare_device *dev, const void *blob, size_t len, rshare_pd **out)
{
	struct rs_pd_info info = { 0 };
	struct rs_slot *ds;
	struct rs_blob b;
	int status;

	if (!out)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "out is NULL"));
	status = rs_pin(dev, RS_OBJ_DEVICE, &ds);
	if (status)
		RS_RETURN(status);
	status = rs_blob_decode(blob, len, &b);
	if (!status)
		status = rs_blob_check_target(&b, RSHARE_KIND_PD, &ds->u.dev->ctx);
	if (!status) {
		info.handle = b.handle;
		info.serial = b.serial;
		status = ds->u.dev->ctx.ops->pd_import(&ds->u.dev->ctx, &info);
	}
	if (!status)
		status = publish_pd(ds, &info, true, out);
	rs_unpin(ds);
	RS_RETURN(status);
}

int rshare_pd_unimport(rshare_pd *pd)
{
	struct rs_slot *slot;
	struct rs_pd_obj *obj;
	int status = rs_retire_begin(pd, RS_OBJ_PD, &slot);

	if (status)
		RS_RETURN(status);
	obj = &slot->u.pd;
	obj->dev->ctx.ops->pd_unimport(&obj->dev->ctx, &obj->info);
	atomic_fetch_sub(&obj->dev->children, 1);
	rs_retire_commit(slot);
	return RSHARE_OK;
}

int rshare_pd_free(rshare_pd *pd)
{
	struct rs_slot *slot;
	struct rs_pd_obj *obj;
	int status = rs_retire_begin(pd, RS_OBJ_PD, &slot);

	if (status)
		RS_RETURN(status);
	obj = &slot->u.pd;
	status = obj->dev->ctx.ops->pd_dealloc(&obj->dev->ctx, &obj->info);
	if (status) {
		rs_retire_cancel(slot);
		RS_RETURN(status);
	}
	atomic_fetch_sub(&obj->dev->children, 1);
	rs_retire_commit(slot);
	return RSHARE_OK;
}

int rshare_pd_handle(const rshare_pd *pd, uint32_t *handle)
{
	struct rs_slot *slot;
	int status;

	if (!handle)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "handle is NULL"));
	status = rs_pin(pd, RS_OBJ_PD, &slot);
	if (status)
		RS_RETURN(status);
	*handle = slot->u.pd.info.handle;
	rs_unpin(slot);
	return RSHARE_OK;
}
