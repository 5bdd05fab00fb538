/* The life cycle PDs and VARs share: making a provider object (allocated
 * or imported from a validated blob) a handle, and releasing it locally
 * (unimport) or for everyone (free). */
#include "blob.h"
#include "internal.h"
#include "util/error.h"

/* Register obj (device pinned in dev_slot) as a new handle; on failure
 * give the provider side back (unimport or destroy). */
static int publish(struct rs_slot *dev_slot, const struct rs_obj_ops *ops,
		   const struct rs_obj *obj, void **out)
{
	struct rs_device *dev = dev_slot->u.dev;
	struct rs_slot *slot;
	int status = rs_slot_reserve(&slot);

	if (status) {
		/* No handle, no object: give the provider side back. */
		struct rs_obj undo = *obj;
		if (obj->imported)
			ops->unimport(&undo);
		else
			ops->destroy(&undo);
		return status;
	}
	slot->u.obj = *obj;
	slot->u.obj.dev = dev;
	atomic_fetch_add(&dev->children, 1);
	*out = rs_slot_publish(slot, ops->slot_kind);
	return RSHARE_OK;
}

int rs_obj_alloc(const void *dev, const struct rs_obj_ops *ops, uint32_t flags, void **out)
{
	struct rs_obj obj = { .imported = false };
	struct rs_slot *ds;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out is NULL");
	status = rs_pin(dev, RS_OBJ_DEVICE, &ds);
	if (status)
		return status;
	obj.dev = ds->u.dev;
	status = ops->alloc(&obj, flags);
	if (!status)
		status = publish(ds, ops, &obj, out);
	rs_unpin(ds);
	return status;
}

int rs_obj_import(const void *dev, const struct rs_obj_ops *ops, const void *blob,
		  size_t len, void **out)
{
	struct rs_obj obj = { .imported = true };
	struct rs_slot *ds;
	struct rs_blob b;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out is NULL");
	status = rs_pin(dev, RS_OBJ_DEVICE, &ds);
	if (status)
		return status;
	obj.dev = ds->u.dev;
	status = rs_blob_decode(blob, len, &b);
	if (!status)
		status = rs_blob_check_target(&b, ops->blob_kind, &obj.dev->ctx);
	if (!status)
		status = ops->import(&obj, &b);
	if (!status)
		status = publish(ds, ops, &obj, out);
	rs_unpin(ds);
	return status;
}

int rs_obj_release(const void *h, const struct rs_obj_ops *ops, bool destroy)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	int status = rs_retire_begin(h, ops->slot_kind, &slot);

	if (status)
		return status;
	obj = &slot->u.obj;
	if (destroy) {
		status = ops->destroy(obj);
		if (status) {
			rs_retire_cancel(slot); /* still ours: unimport remains */
			return status;
		}
	}
	if (ops->unmap)
		ops->unmap(obj);
	if (!destroy)
		ops->unimport(obj);
	atomic_fetch_sub(&obj->dev->children, 1);
	rs_retire_commit(slot);
	return RSHARE_OK;
}
