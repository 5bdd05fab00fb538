/* The life cycle PDs and VARs share: registering a provider object as a
 * handle, and releasing it locally (unimport) or for everyone (free). */
#include "internal.h"
#include "util/error.h"

int rs_obj_publish(struct rs_slot *dev_slot, const struct rs_obj_ops *ops,
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
