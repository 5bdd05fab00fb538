/*
 * The core's objects and its handle table.
 *
 * Public handles are tokens, not pointers: slot index, object kind and the
 * slot's generation packed into the pointer value. The core never
 * dereferences a handle; it looks the slot up and compares generations, so a
 * handle that was freed (even long ago, even after the slot was reused)
 * resolves to RSHARE_E_STALE instead of touching memory.
 *
 * A call pins the slot for its duration (one CAS); destroying an object
 * first marks the slot dying, which turns away new pins, then waits for the
 * in-flight ones to drain. A live PD or VAR holds a pin on its device for
 * its whole life, which is what keeps the device from closing under it.
 * Slots live in chunks that are never freed, so a lookup can always read
 * the slot it names.
 */
#ifndef RSHARE_CORE_INTERNAL_H
#define RSHARE_CORE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "provider.h"

struct rs_blob;

enum rs_obj_kind { RS_OBJ_DEVICE = 1, RS_OBJ_PD = 2, RS_OBJ_VAR = 3 };

struct rs_device {
	struct rs_ctx ctx;
};

/* A PD or a VAR as the core keeps it: the provider's view plus what the
 * core adds (its device, how it came here, the VAR page mapping). */
struct rs_obj {
	struct rs_device *dev;
	struct rs_slot *dev_slot; /* pinned by this object while it lives */
	bool imported;
	union {
		struct rs_pd_info pd;
		struct {
			struct rs_var_info info;
			_Atomic(void *) addr; /* the mapped page, NULL if unmapped */
		} var;
	} u;
};

struct rs_slot {
	_Atomic uint64_t state;      /* generation:32 | LIVE | DYING | pins:30 */
	_Atomic uint32_t next_free;  /* next slot of a free batch: index + 1, 0 = end */
	_Atomic uint32_t next_batch; /* first slot of the next free batch, likewise */
	_Atomic uint8_t kind;
	uint32_t index;             /* own position, fixed at creation */
	union {
		struct rs_device *dev; /* RS_OBJ_DEVICE */
		struct rs_obj obj;     /* RS_OBJ_PD, RS_OBJ_VAR */
	} u;
};

/* Take a free slot for a new object (from the calling thread's cache: no
 * locked operation on the uncontended path). The caller fills slot->u and then
 * publishes it (or gives it back with rs_slot_discard). */
int rs_slot_reserve(struct rs_slot **slot);
/* Make a reserved slot live; returns the public handle. */
void *rs_slot_publish(struct rs_slot *slot, int kind);
void rs_slot_discard(struct rs_slot *slot);

/* Pin the object behind handle h for the duration of a call.
 * RSHARE_E_INVAL for NULL, RSHARE_E_STALE for anything not live. */
int rs_pin(const void *h, int kind, struct rs_slot **slot);
void rs_unpin(struct rs_slot *slot);

/* Begin destroying the object behind h: exclusive once it returns OK (new
 * pins are refused, in-flight ones have drained). Finish with
 * rs_retire_commit (the handle becomes stale forever: generations never
 * wrap, a slot out of them is retired for good) or undo with
 * rs_retire_cancel (the object stays live, e.g. a failed free). */
int rs_retire_begin(const void *h, int kind, struct rs_slot **slot);
void rs_retire_commit(struct rs_slot *slot);
/* As rs_retire_begin, but refuse with RSHARE_E_BUSY (*pins set, nothing
 * recorded) while any pin is held instead of waiting. */
int rs_retire_if_idle(const void *h, int kind, struct rs_slot **slot, uint64_t *pins);
void rs_retire_cancel(struct rs_slot *slot);

#ifdef RSHARE_TEST_HOOKS
/* Tests only (the rshare_core_test library): give the free slot that the
 * stale handle h named generation gen, to bring it near the wrap. */
int rs_test_slot_set_gen(const void *h, int kind, uint32_t gen);
#endif

/* What differs between the kinds of shared object in their common life
 * cycle (object.c): which provider calls release and destroy them, and
 * what must go first (the VAR's mapping). */
struct rs_obj_ops {
	int slot_kind; /* RS_OBJ_PD or RS_OBJ_VAR */
	int blob_kind; /* RSHARE_KIND_PD or RSHARE_KIND_VAR */
	/* Provider calls. obj->dev is set; each initialises the rest of its
	 * part of obj (the slot it is built in may hold an old object).
	 * import takes the validated blob. */
	int (*alloc)(struct rs_obj *obj, uint32_t flags);
	int (*import)(struct rs_obj *obj, const struct rs_blob *b);
	void (*unimport)(struct rs_obj *obj);
	int (*destroy)(struct rs_obj *obj);
	void (*unmap)(struct rs_obj *obj); /* may be NULL */
};

/* Allocate, or import from a blob (validated here), a new object on dev. */
int rs_obj_alloc(const void *dev, const struct rs_obj_ops *ops, uint32_t flags, void **out);
int rs_obj_import(const void *dev, const struct rs_obj_ops *ops, const void *blob,
		  size_t len, void **out);
/* unimport (destroy false) or free (destroy true) the object behind h. A
 * failed destroy leaves the handle live. */
int rs_obj_release(const void *h, const struct rs_obj_ops *ops, bool destroy);

/* Adopt an already-duplicated context fd into a new device handle. The fd
 * is taken in every case: on failure it has been closed (once a provider
 * has imported it, only closing the context can release it). Shared by
 * import and channel. */
int rs_device_adopt(int fd, void **out_handle);

#endif
