/* The life cycle PDs and VARs share: making a provider object (allocated
 * or imported from a validated blob) a handle, and releasing it locally
 * (unimport) or for everyone (free). */
#include "blob.h"
#include "internal.h"
#include "util/error.h"

/* Start a new object: pin its device (the pin stays with the object for
 * its whole life) and reserve its slot, so the object is built in place
 * and publishing it is one store. */
static int begin(const void *dev, bool imported, struct rs_slot **slot)
{
	struct rs_slot *dev_slot;
	int status = rs_pin(dev, RS_OBJ_DEVICE, &dev_slot);

	if (status)
		return status;
	status = rs_slot_reserve(slot);
	if (status) {
		rs_unpin(dev_slot);
		return status;
	}
	(*slot)->u.obj.dev = dev_slot->u.dev;
	(*slot)->u.obj.dev_slot = dev_slot;
	(*slot)->u.obj.imported = imported;
	return RSHARE_OK;
}

/* Publish the object built in slot, or give slot and device pin back. */
static int finish(struct rs_slot *slot, const struct rs_obj_ops *ops, int status, void **out)
{
	if (status) {
		rs_unpin(slot->u.obj.dev_slot);
		rs_slot_discard(slot);
		return status;
	}
	*out = rs_slot_publish(slot, ops->slot_kind);
	return RSHARE_OK;
}

int rs_obj_alloc(const void *dev, const struct rs_obj_ops *ops, uint32_t flags, void **out)
{
	struct rs_slot *slot;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out is NULL");
	status = begin(dev, false, &slot);
	if (status)
		return status;
	return finish(slot, ops, ops->alloc(&slot->u.obj, flags), out);
}

int rs_obj_import(const void *dev, const struct rs_obj_ops *ops, const void *blob,
		  size_t len, void **out)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	struct rs_blob b;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out is NULL");
	status = begin(dev, true, &slot);
	if (status)
		return status;
	obj = &slot->u.obj;
	status = rs_blob_decode(blob, len, &b);
	if (!status)
		status = rs_blob_check_target(&b, ops->blob_kind, &obj->dev->ctx);
	if (!status)
		status = ops->import(obj, &b);
	return finish(slot, ops, status, out);
}

int rs_obj_release(const void *h, const struct rs_obj_ops *ops, bool destroy)
{
	struct rs_slot *slot, *dev_slot;
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
	dev_slot = obj->dev_slot;
	rs_retire_commit(slot);
	rs_unpin(dev_slot); /* last: the device may close from here on */
	return RSHARE_OK;
}
