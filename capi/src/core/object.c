/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The life cycle every shared object kind (PD, VAR, MR, DM, buffer) goes through:
 * making a provider object (allocated or imported from a validated blob) a
 * handle, exporting it, and releasing it locally (unimport) or for
 * everyone (free). What differs per kind is its struct rs_obj_ops. */
#include "blob.h"
#include "internal.h"
#include "ledger.h"
#include "util/copyout.h"
#include "util/error.h"

uint32_t rs_ctx_caps(struct rs_ctx *ctx)
{
	const struct rs_provider *p = ctx->ops;
	uint32_t caps;

	if (p->caps)
		caps = p->caps(ctx);
	else /* a provider without the caps op offers what its table has */
		caps = (p->pd_alloc ? (uint32_t)RSHARE_CAP_PD : 0) |
		       (p->var_alloc ? (uint32_t)RSHARE_CAP_VAR : 0) |
		       (p->mr_reg ? (uint32_t)RSHARE_CAP_MR : 0) |
		       (p->dm_alloc ? (uint32_t)RSHARE_CAP_DM : 0);
	/* A shared buffer is the core's memfd plus an MR shared as any. */
	if (caps & RSHARE_CAP_MR)
		caps |= RSHARE_CAP_BUF;
	return caps;
}

int rs_unsupported(const struct rs_ctx *ctx, const char *what)
{
	return rs_fail(RSHARE_E_UNSUPPORTED, 0, "device %s (provider %s) cannot %s",
		       ctx->name, ctx->ops->name, what);
}

/* The import path's helpers, inlined into both entry points
 * (rs_obj_import and rs_obj_import_decoded) whatever the compiler would
 * choose for two callers: an import is on every share's path, and calls
 * there cost a measurable part of it (docs/hardware.md, import speed). */
#define HOT_INLINE static inline __attribute__((always_inline))

/* Start a new object in its parent and reserve its slot, so the object is
 * built in place and publishing it is one store. An object on a device
 * keeps a pin on it for its whole life; an MR counts itself in its PD's
 * users instead, taken while the PD is pinned, so a PD being released
 * (which drains pins, then looks at users) always sees it. */
static int begin(const void *parent, const struct rs_obj_ops *ops, bool imported,
		 struct rs_slot **slot)
{
	struct rs_slot *pslot;
	int status = rs_pin(parent, ops->parent_kind, &pslot);

	if (status)
		return status;
	status = rs_slot_reserve(slot);
	if (status) {
		rs_unpin(pslot);
		return status;
	}
	struct rs_obj *obj = &(*slot)->u.obj;

	obj->ops = ops;
	obj->imported = imported;
	obj->held = false;
	obj->ledger_known = false;
	atomic_init(&obj->users, 0);
	if (ops->parent_kind == RS_OBJ_DEVICE) {
		obj->dev = pslot->u.dev;
		obj->dev_slot = pslot; /* the pin stays */
		obj->parent = NULL;
	} else {
		obj->dev = pslot->u.obj.dev;
		obj->dev_slot = NULL;
		obj->parent = &pslot->u.obj;
		atomic_fetch_add(&obj->parent->users, 1);
		rs_unpin(pslot);
	}
	return RSHARE_OK;
}

/* Let go of what begin() took from the parent (read before the object's
 * slot is given up). */
static void leave_parent(struct rs_obj *parent, struct rs_slot *dev_slot)
{
	if (parent)
		atomic_fetch_sub(&parent->users, 1);
	else
		rs_unpin(dev_slot); /* the device may close from here on */
}

/* Where the ledger (ledger.h) of dev keeps the serial of an object of this
 * slot kind with this kernel handle and (VAR) mmap offset: a VAR by its
 * mmap entry (on hardware its kernel handle is private to libmlx5), every
 * other kind by its handle. False when dev has no ledger or the ledger does
 * not cover the object (it then keeps the checks of a context without one). */
struct ledger_key {
	enum rs_ledger_space space;
	uint32_t key;
};

static bool ledger_key(const struct rs_device *dev, int slot_kind, uint32_t handle,
		       uint64_t mmap_off, struct ledger_key *k)
{
	if (!dev->ctx.ledger)
		return false;
	if (slot_kind == RS_OBJ_VAR) {
		k->space = RS_LEDGER_MMAP;
		return rs_ledger_mmap_key(mmap_off, &k->key);
	}
	k->space = RS_LEDGER_HANDLES;
	k->key = handle;
	return true;
}

static bool obj_ledger_key(const struct rs_obj *obj, struct ledger_key *k)
{
	int kind = obj->ops->slot_kind;

	return ledger_key(obj->dev, kind, obj->ops->handle(obj),
			  kind == RS_OBJ_VAR ? obj->u.var.info.mmap_off : 0, k);
}

/* A new object takes its handle's ledger serial (if the blob did not
 * bring it). Most contexts (sim0, bare hardware) have no ledger. */
static void take_serial(struct rs_obj *obj)
{
	struct ledger_key k;

	if (obj_ledger_key(obj, &k))
		obj->ledger_known = rs_ledger_get(obj->dev->ctx.ledger, k.space, k.key,
						  &obj->ledger_serial);
}

/* Publish the object built in slot, or give slot and parent back. */
static inline int finish(struct rs_slot *slot, const struct rs_obj_ops *ops, int status, void **out)
{
	struct rs_obj *obj = &slot->u.obj;

	if (status) {
		leave_parent(obj->parent, obj->dev_slot);
		rs_slot_discard(slot);
		return status;
	}
	if (obj->dev->ctx.ledger && !obj->ledger_known)
		take_serial(obj);
	*out = rs_slot_publish(slot, ops->slot_kind);
	return RSHARE_OK;
}

int rs_obj_alloc(const void *parent, const struct rs_obj_ops *ops, const void *args,
		 void **out)
{
	struct rs_slot *slot;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out is NULL");
	status = begin(parent, ops, false, &slot);
	if (status)
		return status;
	status = ops->alloc(&slot->u.obj, args);
	return finish(slot, ops, status, out);
}

/* A blob that carries a ledger serial, imported into a context with the
 * ledger: its handle (VAR: its mmap offset) must not have been freed through
 * rshare since. When checked, obj->ledger_known is set and *k is the key
 * (for recheck_ledger). */
HOT_INLINE int check_ledger(struct rs_obj *obj, const struct rs_blob *b, struct ledger_key *k)
{
	uint32_t now;

	if (!b->has_ledger ||
	    !ledger_key(obj->dev, obj->ops->slot_kind, b->handle, b->mmap_off, k) ||
	    !rs_ledger_get(obj->dev->ctx.ledger, k->space, k->key, &now))
		return RSHARE_OK;
	if (now != b->ledger && k->space == RS_LEDGER_MMAP)
		return rs_fail(RSHARE_E_NOT_FOUND, 0,
			       "VAR page %u at mmap offset 0x%llx on %s was freed since this "
			       "blob was made (ledger serial %u, the blob's %u): the offset "
			       "was or will be handed to another VAR",
			       b->page_id, (unsigned long long)b->mmap_off, obj->dev->ctx.name,
			       now, b->ledger);
	if (now != b->ledger)
		return rs_fail(RSHARE_E_NOT_FOUND, 0,
			       "%s handle %u on %s was freed since this blob was made "
			       "(ledger serial %u, the blob's %u): the handle was or will "
			       "be reused for another object",
			       rs_kind_word(b->kind), b->handle, obj->dev->ctx.name, now,
			       b->ledger);
	obj->ledger_known = true;
	obj->ledger_serial = now;
	return RSHARE_OK;
}

/* check_ledger passed before the kernel was asked for the handle (VAR: its
 * offset mapped). A free of the object meanwhile (its bump comes before its
 * destroy) may have let the kernel give the handle to a new object, which
 * the import then got: the serial still the one checked means no rshare
 * free of the object had begun when the kernel answered. Else the import
 * is undone as release undoes it. */
HOT_INLINE int recheck_ledger(struct rs_obj *obj, const struct rs_obj_ops *ops,
			      const struct ledger_key *k)
{
	uint32_t now;

	if (!rs_ledger_get(obj->dev->ctx.ledger, k->space, k->key, &now) ||
	    now == obj->ledger_serial)
		return RSHARE_OK;
	if (ops->unmap)
		ops->unmap(obj);
	ops->unimport(obj);
	return rs_fail(RSHARE_E_NOT_FOUND, 0,
		       "this %s on %s was freed while the blob was being imported (ledger "
		       "serial %u, the blob's %u): its %s may name another object now",
		       rs_obj_kind_name(ops->slot_kind), obj->dev->ctx.name, now,
		       obj->ledger_serial, k->space == RS_LEDGER_MMAP ? "mmap offset" : "handle");
}

/* Import from blob (raw, len bytes) or from b (decoded already). */
HOT_INLINE int import(const void *parent, const struct rs_obj_ops *ops, const void *blob,
		      size_t len, const struct rs_blob *b, void **out)
{
	struct ledger_key k; /* set by check_ledger when it checked */
	struct rs_slot *slot;
	struct rs_obj *obj;
	struct rs_blob decoded;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out is NULL");
	status = begin(parent, ops, true, &slot);
	if (status)
		return status;
	obj = &slot->u.obj;
	if (!b) {
		status = rs_blob_decode(blob, len, &decoded);
		b = &decoded;
	}
	if (!status)
		status = rs_blob_check_target(b, ops->blob_kind, &obj->dev->ctx);
	/* Most contexts (sim0, bare hardware) have no ledger: one test. */
	if (!status && obj->dev->ctx.ledger)
		status = check_ledger(obj, b, &k);
	if (!status)
		status = ops->import(obj, b);
	if (!status && obj->ledger_known)
		status = recheck_ledger(obj, ops, &k);
	return finish(slot, ops, status, out);
}

int rs_obj_import(const void *parent, const struct rs_obj_ops *ops, const void *blob,
		  size_t len, void **out)
{
	return import(parent, ops, blob, len, NULL, out);
}

int rs_obj_import_decoded(const void *parent, const struct rs_obj_ops *ops,
			  const struct rs_blob *b, void **out)
{
	return import(parent, ops, NULL, 0, b, out);
}

int rs_obj_hold(const void *h, const struct rs_obj_ops *ops, struct rs_obj **obj)
{
	struct rs_slot *slot;
	int status = rs_pin(h, ops->slot_kind, &slot);

	if (status)
		return status;
	slot->u.obj.held = true;
	*obj = &slot->u.obj;
	rs_unpin(slot);
	return RSHARE_OK;
}

static int release(const void *h, const struct rs_obj_ops *ops, bool destroy, bool owner)
{
	struct rs_slot *slot, *dev_slot;
	struct rs_obj *obj, *parent;
	uint32_t users;
	int status = rs_retire_begin(h, ops->slot_kind, &slot);

	if (status)
		return status;
	obj = &slot->u.obj;
	if (obj->held && !owner) {
		rs_retire_cancel(slot);
		return rs_fail(RSHARE_E_BUSY, 0,
			       "this %s belongs to a shared buffer: free or unimport the "
			       "buffer instead", rs_obj_kind_name(ops->slot_kind));
	}
	/* No pin is left, so no new user can come: the count is final. */
	users = atomic_load(&obj->users);
	if (users) {
		rs_retire_cancel(slot);
		return rs_fail(RSHARE_E_BUSY, 0,
			       "%u MR or buffer handle(s) of this process still live in this "
			       "%s: release them first",
			       users, rs_obj_kind_name(ops->slot_kind));
	}
	if (destroy) {
		/* Blobs of it stop importing before the kernel can hand its
		 * handle to another object. */
		struct rs_ledger *l = obj->dev->ctx.ledger;
		struct ledger_key k;
		uint32_t before;
		/* A held MR is freed by its buffer, which checked and bumped
		 * the same handle's serial already: it moves on regardless. */
		const uint32_t *expect = !owner && obj->ledger_known ? &obj->ledger_serial : NULL;
		bool bumped = obj_ledger_key(obj, &k) &&
			      rs_ledger_bump(l, k.space, k.key, expect, &before);

		/* The serial moved on since this handle got the object (and
		 * did not move now): it was freed through rshare elsewhere, and
		 * the kernel may have given its handle (or VAR offset) to
		 * another object, which a destroy would take down instead; or
		 * another free of it is in flight. */
		if (bumped && expect && before != *expect) {
			rs_retire_cancel(slot);
			return rs_fail(RSHARE_E_NOT_FOUND, 0,
				       "this %s on %s was freed by another process since this "
				       "handle got it, or is being freed (ledger serial %u, the "
				       "handle's %u): unimport it instead",
				       rs_obj_kind_name(ops->slot_kind), obj->dev->ctx.name,
				       before, obj->ledger_serial);
		}
		status = ops->destroy(obj);
		if (status) {
			if (bumped)
				rs_ledger_undo(l, k.space, k.key, before);
			rs_retire_cancel(slot); /* still ours: unimport remains */
			return status;
		}
	}
	if (ops->unmap)
		ops->unmap(obj);
	if (!destroy)
		ops->unimport(obj);
	parent = obj->parent;
	dev_slot = obj->dev_slot;
	rs_retire_commit(slot);
	leave_parent(parent, dev_slot); /* last: the parent may go from here on */
	return RSHARE_OK;
}

int rs_obj_release(const void *h, const struct rs_obj_ops *ops, bool destroy)
{
	return release(h, ops, destroy, false);
}

int rs_obj_release_held(const void *h, const struct rs_obj_ops *ops, bool destroy)
{
	return release(h, ops, destroy, true);
}

int rs_obj_export(const void *h, const struct rs_obj_ops *ops, void *buf, size_t cap,
		  size_t *len)
{
	uint8_t raw[RSHARE_BLOB_MAX];
	struct rs_slot *slot;
	struct rs_obj *obj;
	struct rs_blob b;
	int status;

	if (!len)
		return rs_fail(RSHARE_E_INVAL, 0, "len is NULL");
	status = rs_pin(h, ops->slot_kind, &slot);
	if (status)
		return status;
	obj = &slot->u.obj;
	rs_blob_init(&b, ops->blob_kind, &obj->dev->ctx);
	status = ops->to_blob(obj, &b);
	b.has_ledger = obj->ledger_known;
	b.ledger = obj->ledger_serial;
	rs_unpin(slot);
	if (status)
		return status;
	return rs_copy_out(raw, rs_blob_encode(&b, raw), buf, cap, len);
}

int rs_obj_handle(const void *h, const struct rs_obj_ops *ops, uint32_t *handle)
{
	struct rs_slot *slot;
	int status;

	if (!handle)
		return rs_fail(RSHARE_E_INVAL, 0, "handle is NULL");
	status = rs_pin(h, ops->slot_kind, &slot);
	if (status)
		return status;
	*handle = ops->handle(&slot->u.obj);
	rs_unpin(slot);
	return RSHARE_OK;
}

int rs_obj_native(const void *h, const struct rs_obj_ops *ops, void **native)
{
	struct rs_slot *slot;
	struct rs_obj *obj;
	int status;

	if (!native)
		return rs_fail(RSHARE_E_INVAL, 0, "native is NULL");
	status = rs_pin(h, ops->slot_kind, &slot);
	if (status)
		return status;
	obj = &slot->u.obj;
	if (!(rs_ctx_caps(&obj->dev->ctx) & RSHARE_CAP_NATIVE))
		status = rs_fail(RSHARE_E_UNSUPPORTED, 0,
				 "device %s (provider %s) has no native rdma-core objects",
				 obj->dev->ctx.name, obj->dev->ctx.ops->name);
	else
		*native = ops->native(obj);
	rs_unpin(slot);
	return status;
}
