/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What a forked child owns.
 *
 * A child made by fork() inherits the parent's handles, its device fds and
 * its VAR mappings, all sharing the parent's objects. The child may use
 * them; closing an inherited device releases, in the child only, every
 * object of that device the child inherited: each is unimported (its VAR
 * page unmapped in the child), as rshare_*_unimport would, and none is
 * freed, so the parent and every other process keep them. Objects the child
 * made itself on that device keep the device open (RSHARE_E_BUSY) like in
 * any process. The handle table notices the fork itself (an atfork handler,
 * handle.c): no call checks the process id.
 */
#include "internal.h"

/* Is obj, in a slot of kind, an object of dev inherited through a fork?
 * Called with the slot pinned, so obj is the live object. */
static void release_if_inherited(struct rs_slot *slot, int kind, struct rs_device *dev)
{
	void *h = rs_slot_handle(slot, kind);
	struct rs_slot *pinned;
	const struct rs_obj_ops *ops;
	bool mine;

	if (!h || rs_pin(h, kind, &pinned) != RSHARE_OK)
		return;
	mine = pinned->u.obj.dev == dev && rs_slot_inherited(pinned);
	ops = pinned->u.obj.ops;
	rs_unpin(pinned);
	if (mine)
		rs_obj_release(h, ops, false); /* local: never the shared object */
}

void rs_release_inherited(struct rs_device *dev)
{
	/* In the kind table's release passes: an object before what it lives
	 * in (MRs before their PDs, which refuse to go while MRs live). */
	for (int pass = 0; pass < RS_RELEASE_PASSES; pass++) {
		for (int k = 1; k <= RS_NKINDS; k++) {
			struct rs_slot *slot;
			uint32_t cursor = 0;

			if (rs_kind(k)->release != pass)
				continue;
			while ((slot = rs_slot_next(&cursor)))
				release_if_inherited(slot, rs_kind(k)->slot_kind, dev);
		}
	}
}
