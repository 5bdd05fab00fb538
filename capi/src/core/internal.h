/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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
 * in-flight ones to drain. A live PD, VAR or DM holds a pin on its device
 * for its whole life, which is what keeps the device from closing under it.
 * An MR lives in its PD instead: it holds a count on the PD (rs_obj.users),
 * which keeps the PD, and so the device, from going while the MR lives.
 * Slots live in chunks that are never freed, so a lookup can always read
 * the slot it names.
 */
#ifndef RSHARE_CORE_INTERNAL_H
#define RSHARE_CORE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kinds.h"
#include "provider.h"

struct rs_blob;
struct rs_obj_ops;

/* Kinds owned by other parts of the library (the broker), kept apart from
 * the object kinds (kinds.h); their slots hold a pointer in u.any. */
enum rs_aux_kind { RS_OBJ_ATTACH = 13, RS_OBJ_BROKER = 14, RS_OBJ_SHARE = 15 };

/* "device", "PD", "VAR", "MR", "DM", "broker", "share": what a handle of
 * slot kind k is. */
static inline const char *rs_obj_kind_name(int k)
{
	if (k == RS_OBJ_BROKER || k == RS_OBJ_SHARE)
		return k == RS_OBJ_BROKER ? "broker" : "share";
	if (k == RS_OBJ_ATTACH)
		return "attach operation";
	if (k == RS_OBJ_DEVICE)
		return "device";
	return rs_kind_of_slot(k) ? rs_kind(rs_kind_of_slot(k))->word : "object";
}

struct rs_device {
	struct rs_ctx ctx;
};

/* A shared object as the core keeps it: the provider's view plus what the
 * core adds (its device, its parent, how it came here, the VAR page
 * mapping). */
struct rs_obj {
	const struct rs_obj_ops *ops; /* its kind's life cycle */
	struct rs_device *dev;
	struct rs_slot *dev_slot; /* pinned by this object while it lives; NULL
				   * for an MR, which lives in its parent */
	struct rs_obj *parent;    /* an MR's PD (holding a users count), else NULL */
	_Atomic uint32_t users;   /* objects living in this one (MRs on a PD) */
	bool imported;
	bool held;                /* an MR owned by a shared buffer: only the
				   * buffer releases it (rs_obj_release_held) */
	bool ledger_known;        /* ledger_serial is its handle's serial (ledger.h) */
	uint32_t ledger_serial;
	union {
		struct rs_pd_info pd;
		struct {
			struct rs_var_info info;
			_Atomic(void *) addr; /* the mapped page, NULL if unmapped */
		} var;
		struct rs_mr_info mr;
		struct rs_dm_info dm;
		struct rs_buf_info {
			void *mr;          /* its MR's handle (held, see above) */
			struct rs_obj *mr_obj; /* that MR, live while the buffer is */
			int fd;            /* the sealed memfd, owned */
			void *addr;        /* this process's shared mapping of it */
			uint64_t length;
			uint64_t mem_dev, mem_ino; /* the memfd's identity */
		} buf;
	} u;
};

struct rs_slot {
	_Atomic uint64_t state;      /* generation:32 | LIVE | DYING | pins:30 */
	_Atomic uint32_t next_free;  /* next slot of a free batch: index + 1, 0 = end */
	_Atomic uint32_t next_batch; /* first slot of the next free batch, likewise */
	_Atomic uint8_t kind;
	uint32_t index;             /* own position, fixed at creation */
	uint32_t born;              /* the process's fork generation when published */
	union {
		struct rs_device *dev; /* RS_OBJ_DEVICE */
		struct rs_obj obj;     /* an object kind (kinds.h) */
		void *any;             /* RS_OBJ_BROKER, RS_OBJ_SHARE, RS_OBJ_ATTACH */
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

/* Forks (fork.c says what a forked child owns). Each fork starts a new
 * generation in the child; in the child, every pin held by a thread of the
 * parent (which does not exist there) is dropped, so nothing waits for it.
 * Was the object in slot published before this process's last fork? */
bool rs_slot_inherited(const struct rs_slot *slot);
/* Walk every slot ever made: *cursor starts at 0; NULL at the end. */
struct rs_slot *rs_slot_next(uint32_t *cursor);
/* The public handle of the live object of kind in slot, NULL if none. */
void *rs_slot_handle(struct rs_slot *slot, int kind);
/* In a forked child: release locally (unimport) every object of dev that
 * the child inherited, MRs before their PDs. */
void rs_release_inherited(struct rs_device *dev);

#ifdef RSHARE_TEST_HOOKS
/* Tests only (the rshare_core_test library): give the free slot that the
 * stale handle h named generation gen, to bring it near the wrap. */
int rs_test_slot_set_gen(const void *h, int kind, uint32_t gen);
#endif

/* What differs between the kinds of shared object in their common life
 * cycle (object.c): where they live, which provider calls make, export,
 * release and destroy them, and what must go first (the VAR's mapping).
 * The rest of what a kind is comes from the kind table (kinds.h), and so
 * do the first three fields: RS_OPS_KIND(NAME). */
struct rs_obj_ops {
	int slot_kind;   /* RS_OBJ_<NAME> */
	int blob_kind;   /* RSHARE_KIND_<NAME> */
	int parent_kind; /* RS_OBJ_DEVICE, or RS_OBJ_PD for an MR */
	/* Provider calls. obj->dev (and obj->parent) are set; each initialises
	 * the rest of its part of obj (the slot it is built in may hold an old
	 * object). alloc takes the kind's arguments, import the validated
	 * blob. */
	int (*alloc)(struct rs_obj *obj, const void *args);
	int (*import)(struct rs_obj *obj, const struct rs_blob *b);
	void (*unimport)(struct rs_obj *obj);
	int (*destroy)(struct rs_obj *obj);
	void (*unmap)(struct rs_obj *obj); /* may be NULL */
	/* The blob's kind fields (the identity is filled already). */
	int (*to_blob)(const struct rs_obj *obj, struct rs_blob *b);
	uint32_t (*handle)(const struct rs_obj *obj);
	void *(*native)(const struct rs_obj *obj);
};

/* Allocate (args: the kind's), or import from a blob (validated here), a
 * new object in parent (a device, or a PD for an MR). */
int rs_obj_alloc(const void *parent, const struct rs_obj_ops *ops, const void *args,
		 void **out);
int rs_obj_import(const void *parent, const struct rs_obj_ops *ops, const void *blob,
		  size_t len, void **out);
/* rs_obj_import of a blob already decoded (b), checked against ops' kind. */
int rs_obj_import_decoded(const void *parent, const struct rs_obj_ops *ops,
			  const struct rs_blob *b, void **out);
/* unimport (destroy false) or free (destroy true) the object behind h. A
 * failed destroy leaves the handle live; so does an object with others
 * living in it (RSHARE_E_BUSY). */
int rs_obj_release(const void *h, const struct rs_obj_ops *ops, bool destroy);
/* The same for an object marked held (the MR of a shared buffer), which
 * rs_obj_release refuses with RSHARE_E_BUSY: only its owner calls this. */
int rs_obj_release_held(const void *h, const struct rs_obj_ops *ops, bool destroy);
/* Mark the live object behind h held (see struct rs_obj); *obj gets it. */
int rs_obj_hold(const void *h, const struct rs_obj_ops *ops, struct rs_obj **obj);

/* The MR inside a shared buffer (mr.c, for buf.c): registered or imported
 * held, released only through rs_mr_release_held. */
int rs_mr_reg_held(void *pd, void *addr, uint64_t length, uint32_t access, void **mr,
		   struct rs_obj **obj);
int rs_mr_import_held(void *pd, const struct rs_blob *b, void **mr, struct rs_obj **obj);
int rs_mr_release_held(void *mr, bool destroy);
/* The (buf, cap, len) blob of the object behind h. */
int rs_obj_export(const void *h, const struct rs_obj_ops *ops, void *buf, size_t cap,
		  size_t *len);
/* The kernel handle, and the borrowed native object (RSHARE_E_UNSUPPORTED
 * without RSHARE_CAP_NATIVE). */
int rs_obj_handle(const void *h, const struct rs_obj_ops *ops, uint32_t *handle);
int rs_obj_native(const void *h, const struct rs_obj_ops *ops, void **native);

/* The device's capabilities: the provider's caps op, or what its table
 * offers when it has none. */
uint32_t rs_ctx_caps(struct rs_ctx *ctx);
/* RSHARE_E_UNSUPPORTED: "device NAME (provider P) cannot WHAT" (a NULL
 * provider op). */
int rs_unsupported(const struct rs_ctx *ctx, const char *what);

/* Adopt an already-duplicated context fd, with the ledger fd that came
 * with it (or -1; ledger.h), into a new device handle. Both fds are taken
 * in every case: on failure it has been closed (once a provider
 * has imported it, only closing the context can release it). Shared by
 * import, channel and broker. Failure messages name the fd as the caller
 * knows it: user_fd, the fd passed to rshare_device_import() (fd is only
 * the library's private duplicate), or, when user_fd is -1, "the device fd
 * received" (a fd the caller never saw). */
int rs_device_adopt(int fd, int ledger_fd, int user_fd, void **out_handle);
/* rs_device_adopt() of an fd another process sent, with the ledger fd that
 * came with it (or -1): only a kind a device can be (rs_fd_may_be_device)
 * reaches a provider, which may talk to the file; anything else is closed
 * off this thread (RSHARE_E_NODEV; a ledger fd of another kind is closed
 * and the context adopted without it). */
int rs_device_adopt_received(int fd, int ledger_fd, void **out_handle);
/* The fds that carry ctx to another process: its command fd, then its
 * ledger's if it has one. Returns how many (1 or 2). */
int rs_ctx_fds(const struct rs_ctx *ctx, int fds[2]);

#endif
