/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The simulated kernel object table.
 *
 * One table models one kernel "ufile": every context that shares its
 * command fd sees the same objects, a handle means something only inside
 * it, and it disappears when its last fd (and mapping) goes. It lives at the
 * start of a sealed memfd, followed by the VAR pages and the device memory,
 * so other processes receive it as an ordinary fd.
 *
 * THE RULE FOR EVERY SIM SOURCE FILE: the whole memfd is untrusted input,
 * like bytes from a socket. Any process holding the fd can write any byte
 * at any time, even while we hold the lock. So:
 *   - every shared field is read once (SH_LOAD, one relaxed atomic load)
 *     into a local, validated there, and only the local is used;
 *   - no index, offset, length or count read from shared memory reaches a
 *     pointer computation or a syscall before it is range-checked;
 *   - shared writes go through SH_STORE (an atomic store: a racing peer is
 *     a data race in the peer's process, never undefined behaviour in ours);
 *   - nothing in shared memory is glibc's (no pthread object): the lock is
 *     our own futex word whose every value is handled (sim_lock.c).
 * A peer can therefore destroy, forge or leak objects of that table and
 * deny service on it, as a process holding a kernel ufile cannot; it cannot
 * make another process crash, write outside the table's file, or wait past
 * the lock bound.
 *
 * The constants (struct sim_header) are validated once per process when it
 * first imports the table and then kept in the process's registry entry
 * (struct sim_map); they are never read from shared memory again.
 */
#ifndef RSHARE_SIM_TABLE_H
#define RSHARE_SIM_TABLE_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/kinds.h"

#define SIM_MAGIC 0x3242415453485352ull /* "RSHSTAB2" as little-endian bytes */
#define SIM_LAYOUT 3 /* 3: the lock's liveness is an OFD lock (sim_lock.c) */
#define SIM_GUID 0x02c0de5100000030ull /* sim0's node GUID */
/* A table's memfd is sealed against any change of size, and the seals
 * themselves: nobody's mapping can ever lose its end (no SIGBUS). */
#define SIM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* Handles: three levels of 64-bit "used" bitmaps, so finding the lowest
 * free handle is three loads and three ctz, whatever is live. */
#define SIM_MAX_OBJECTS (64u * 64u * 64u) /* 262,144 live objects per table */
#define SIM_VAR_PAGES 64u                 /* device-wide VAR budget, as mlx5's */
#define SIM_DM_GRANULE 4096u              /* device memory allocation unit */
#define SIM_DM_GRANULES 64u
#define SIM_DM_BYTES (SIM_DM_GRANULE * SIM_DM_GRANULES) /* 256 KiB per device */
/* What a process can map and sim_pages.c tracks: the VAR pages 0 ..
 * SIM_VAR_PAGES - 1, then the device memory granules (since 1.2). */
#define SIM_MAP_UNITS (SIM_VAR_PAGES + SIM_DM_GRANULES)
#define SIM_DM_UNIT(g) (SIM_VAR_PAGES + (g))

/* How long a call waits for the table lock by default before it answers
 * RSHARE_E_BUSY; RSHARE_SIM_LOCK_MS overrides it (read once per process;
 * tests use it to keep CI fast). */
#define SIM_LOCK_BOUND_MS 5000u

/* Liveness bytes (sim_lock.c): a holder value v's byte is at
 * SIM_LIVE_BASE + (v & SIM_LIVE_MASK), far past the file's end. */
#define SIM_LIVE_BASE (1ull << 61)
#define SIM_LIVE_MASK ((1ull << 60) - 1)

/* The liveness byte of holder value v: the lock probes it, the pages'
 * description holds it (sim_pages.c), a test's peer takes it; a layout fact
 * here rather than a call into the lock. */
static inline off_t sim_live_offset(uint64_t v)
{
	return (off_t)(SIM_LIVE_BASE + (v & SIM_LIVE_MASK));
}

/* One shared load or store of a field. Relaxed: the lock orders honest
 * writers; a dishonest one can only change values, which we validate. */
#define SH_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define SH_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
/* A store that publishes (an object's type): every store before it lands
 * first, so a holder that dies leaves something sim_repair understands. */
#define SH_PUBLISH(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* Object types: 0 a free slot, then one per kind, numbered as the kind
 * (SIM_PD = RSHARE_KIND_PD, ...: kinds.h). */
#define SIM_TYPE_ENUM(N, ...) SIM_##N = RSHARE_KIND_##N,
enum sim_obj_type { SIM_FREE = 0, RS_KINDS(SIM_TYPE_ENUM) };
#undef SIM_TYPE_ENUM

/* One object slot, 64 bytes. Which fields mean something depends on type. */
struct sim_obj {
	uint32_t type;      /* enum sim_obj_type; anything else is garbage */
	uint32_t key;       /* MR: the key byte of its lkey/rkey */
	uint64_t serial;    /* creation serial: tells a reused handle apart */
	uint32_t page;      /* VAR: its page */
	uint32_t flags;     /* VAR: allocation flags; MR: access flags */
	uint32_t pd_handle; /* MR: its PD */
	uint32_t mr_count;  /* PD: live MRs registered on it (a hint a peer may bend) */
	uint64_t pd_serial; /* MR: its PD's serial */
	uint64_t addr;      /* MR: the registering process's address */
	uint64_t length;    /* MR, DM: bytes */
	uint32_t dm_first;  /* DM: first granule */
	uint32_t dm_count;  /* DM: granules */
};

/* The constants, written once by the creator before anyone else can see
 * the table, validated by every importing process, then never re-read. */
struct sim_header {
	uint64_t magic;
	uint32_t layout;
	uint32_t page_size;
	uint64_t table_id;
	uint64_t guid;
	uint32_t max_objects;
	uint32_t var_pages;
	uint64_t var_area_off;
	uint64_t dm_area_off;
	uint64_t dm_bytes;
	uint64_t file_size;
};

/* What the lock holder is in the middle of, so a successor can finish or
 * undo exactly that after the holder died: O(1) repair. */
enum sim_op { SIM_OP_NONE = 0, SIM_OP_ALLOC = 1, SIM_OP_FREE = 2 };
struct sim_intent {
	uint32_t op;        /* enum sim_op */
	uint32_t handle;    /* the object being made or destroyed */
	uint32_t pd_handle; /* MR: its PD, whose count moves with it */
	uint32_t pd_mrs;    /* MR: that PD's count without this MR */
};

struct sim_shared {
	/* The lock: the holder's random value (its liveness byte, the low
	 * half the futex word); 0 when free. sim_lock.c. */
	uint64_t lock;
	uint32_t waiters; /* a hint for unlock: someone may be in FUTEX_WAIT */
	uint32_t reserved;
	uint64_t next_serial;
	struct sim_intent intent;
	uint32_t var_owner[SIM_VAR_PAGES];  /* handle + 1 of the VAR on the page, 0 free */
	uint32_t dm_owner[SIM_DM_GRANULES]; /* handle + 1 of the DM on the granule */
	uint64_t top;                       /* bit i: mid[i] is full */
	uint64_t mid[64];                   /* bit j of mid[i]: leaf[64i + j] is full */
	uint64_t leaf[SIM_MAX_OBJECTS / 64]; /* bit b of leaf[k]: handle 64k + b used */
};

struct sim_table {
	struct sim_header h;
	uint8_t pad0[128 - sizeof(struct sim_header)];
	struct sim_shared s;
	struct sim_obj objs[SIM_MAX_OBJECTS];
};

/*
 * A process's one view of one table (the registry, sim_registry.c): every
 * context of that table in this process shares it, whichever way its fd
 * came. Found by the file's (st_dev, st_ino); dropped, mapping and all, when
 * the last context of the table in this process closes, so a process that
 * sees many tables over time holds only those it still has open.
 */
struct sim_map {
	struct sim_map *next;
	dev_t st_dev;
	ino_t st_ino;
	unsigned refs;           /* contexts of this table in this process */
	/* Serialises this process's threads on the table: the shared lock
	 * then only has to tell processes apart. Covers everything below. */
	pthread_mutex_t local;
	struct sim_table *t;     /* mapped on first use (set once, atomically); NULL before */
	unsigned lookups;        /* sim_lookup calls before the table was mapped */
	/* The validated constants. */
	uint32_t page_size;
	uint64_t table_id;
	uint64_t map_len;
	uint64_t var_area_off;
	uint64_t dm_area_off;
	/* This process's own open file description of the memfd (reopened
	 * through /proc/self/fd, so it is not shared with any other process
	 * the way an fd passed by SCM_RIGHTS is): it carries the OFD read locks
	 * that say "this process maps VAR page p". -1 until needed. */
	int ofd;
	/* ofd is still the description shared with the other side of a fork
	 * (no fd was left to reopen it then): its locks may be the other
	 * process's too, so none is dropped, and sim_pages_ready takes a
	 * description of our own before the allocator or a map trusts it. */
	bool ofd_shared;
	uint32_t page_maps[SIM_MAP_UNITS]; /* live mappings of each unit here */
	/* This process's holder value for the table's lock, its liveness
	 * byte read-locked through ofd; 0 until the first lock (and again in
	 * a forked child, another process). */
	uint64_t lock_value;
};

/* Layout of a table for this machine's page size. */
void sim_layout(uint32_t page_size, struct sim_header *h);

/* Initialise a fresh, zeroed table (the creator only, before sharing). */
void sim_table_init(struct sim_table *t, uint32_t page_size, uint64_t table_id);

/* Registry: the entry for the table in fd, validated (hdr) when this
 * process sees it first; takes a reference. */
int sim_map_get(int fd, struct sim_map **out);
/* Register a table this process has just made and mapped. */
int sim_map_add_new(int fd, struct sim_table *t, struct sim_map **out);
void sim_map_put(struct sim_map *m);
#ifdef RSHARE_TEST_HOOKS
/* Tests only (the rshare_internal_test library): add a registry entry for
 * fd's inode that claims table id table_id, found before any other, as if
 * another table had met this one's inode number. sim_map_put drops it. */
int sim_test_map_inject(int fd, uint64_t table_id, struct sim_map **out);
#endif

/* Lock the table (mapping it through fd first if needed), finishing the
 * half-done update of a holder that died. On success the table is
 * m->t and the caller must sim_unlock(m). BUSY past the bound. */
int sim_lock(struct sim_map *m, int fd);
void sim_unlock(struct sim_map *m);
/* Map the table in this process if it is not yet (sim_map.c): for
 * sim_lookup, and, with m->local held, for sim_lock. */
int sim_map_table(struct sim_map *m, int fd);
int sim_map_table_locked(struct sim_map *m, int fd);
/* The bound in ms (SIM_LOCK_BOUND_MS or RSHARE_SIM_LOCK_MS). */
unsigned sim_lock_bound_ms(void);

/* With the lock held: make the object named by the intent record whole
 * again (done by sim_lock whenever it finds an intent left behind). */
void sim_repair(struct sim_table *t);

/* A validated copy of one live object. */
struct sim_objv {
	uint32_t type, key, page, flags, pd_handle, mr_count, dm_first, dm_count;
	uint64_t serial, pd_serial, addr, length;
};

/* Table operations, with the lock held. Handles are object indices.
 * sim_find: NOT_FOUND (recorded) unless (type, handle, serial) names a
 * live, well-formed object; *o gets its validated copy. */
int sim_find(struct sim_table *t, uint32_t type, uint32_t handle, uint64_t serial,
	     struct sim_objv *o);
/* sim_find without the lock, for imports: they only check that an object
 * exists as described, a point-in-time answer the lock would not make any
 * truer (it may be freed right after either way). An object's serial is
 * its sequence word: sim_create writes it before any other field and
 * publishes the type last, sim_destroy unpublishes the type first, and a
 * lookup reads the serial before and after its copy (through the mapping)
 * or reads the slot twice (by pread); a copy that changed under it is not
 * used. So a lookup answers OK only with a whole object of the serial asked
 * for, else NOT_FOUND (sim_table.c, load_obj_serial and pread_obj). A
 * process that has not mapped the table reads the slot with pread and maps
 * only after a few lookups, so one that receives a context, imports a blob
 * and closes it again never maps the table at all. */
int sim_lookup(struct sim_map *m, int fd, uint32_t type, uint32_t handle, uint64_t serial,
	       struct sim_objv *o);
/* The same without recording an error: for probes. */
bool sim_find_quiet(struct sim_table *t, uint32_t type, uint32_t handle,
		    struct sim_objv *o);
/* Take the lowest free handle and publish o (type and attributes; serial,
 * and key for an MR, are filled in). Resources named in o (VAR page, DM
 * granules) must have been chosen free by the caller. */
int sim_create(struct sim_table *t, struct sim_objv *o, uint32_t *handle);
/* Destroy the object o (as sim_find gave it) at handle. */
void sim_destroy(struct sim_table *t, uint32_t handle, const struct sim_objv *o);

/* VAR page and device memory mappings (sim_pages.c; p is a unit,
 * SIM_DM_UNIT(g) for DM granule g), all with m->local held (sim_lock or
 * directly). sim_pages_ready: make sure this process has its own open file
 * description of the table. sim_page_unmapped: no process maps page p (the
 * allocator's test). sim_page_hold/release: this process maps page p / no
 * longer (one call per mapping). */
int sim_pages_ready(struct sim_map *m, int fd);
bool sim_page_unmapped(struct sim_map *m, uint32_t p);
int sim_page_hold(struct sim_map *m, int fd, uint32_t p);
void sim_page_release(struct sim_map *m, uint32_t p);
/* After a fork, in each process: take a description of its own
 * (registry's atfork); the child forgets the parent's holder value. */
void sim_pages_after_fork(struct sim_map *m, bool child);

#endif
