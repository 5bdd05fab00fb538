/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The simulated table's objects: lowest-free handles from a three-level
 * bitmap, validated object copies, and the O(1) repair of an update whose
 * holder died.
 *
 * Untrusted-memory rule (sim_table.h): every shared field is read once with
 * SH_LOAD into a local and validated before use; a bitmap that lies is
 * checked against the object slot itself and corrected, never believed.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "sim/sim_table.h"
#include "util/error.h"

/* How many lies of the bitmap one allocation corrects before giving up. */
#define ALLOC_TRIES 64
#define NO_PD UINT32_MAX

_Static_assert(sizeof(struct sim_obj) == 64, "object slots are 64 bytes");
_Static_assert(sizeof(struct sim_header) <= 128, "header fits its pad");
_Static_assert(SIM_MAX_OBJECTS == 64u * 64u * 64u, "three bitmap levels of 64");
_Static_assert(SIM_VAR_PAGES <= 64 && SIM_DM_GRANULES <= 64, "budgets fit a word");

void sim_layout(uint32_t page_size, struct sim_header *h)
{
	uint64_t ps = page_size;

	memset(h, 0, sizeof(*h));
	h->magic = SIM_MAGIC;
	h->layout = SIM_LAYOUT;
	h->page_size = page_size;
	h->guid = SIM_GUID;
	h->max_objects = SIM_MAX_OBJECTS;
	h->var_pages = SIM_VAR_PAGES;
	h->var_area_off = (sizeof(struct sim_table) + ps - 1) / ps * ps;
	h->dm_area_off = h->var_area_off + (uint64_t)SIM_VAR_PAGES * ps;
	h->dm_bytes = SIM_DM_BYTES;
	h->file_size = h->dm_area_off + SIM_DM_BYTES;
}

void sim_table_init(struct sim_table *t, uint32_t page_size, uint64_t table_id)
{
	struct sim_header h;

	sim_layout(page_size, &h);
	h.table_id = table_id;
	h.magic = 0;
	t->h = h;
	t->s.next_serial = 1;
	/* Last: a half-made table is never recognised. */
	__atomic_store_n(&t->h.magic, SIM_MAGIC, __ATOMIC_RELEASE);
}

static inline uint64_t bit(uint32_t n)
{
	return 1ull << (n & 63);
}

/* Handle h (< SIM_MAX_OBJECTS) is used: set its bit and the "full" bits
 * above it that now hold. */
static void mark_used(struct sim_table *t, uint32_t h)
{
	uint32_t k = h >> 6, i = k >> 6;
	uint64_t leaf = SH_LOAD(t->s.leaf[k]) | bit(h), mid;

	SH_STORE(t->s.leaf[k], leaf);
	if (leaf != ~0ull)
		return;
	mid = SH_LOAD(t->s.mid[i]) | bit(k);
	SH_STORE(t->s.mid[i], mid);
	if (mid == ~0ull)
		SH_STORE(t->s.top, SH_LOAD(t->s.top) | bit(i));
}

static void mark_free(struct sim_table *t, uint32_t h)
{
	uint32_t k = h >> 6, i = k >> 6;

	SH_STORE(t->s.leaf[k], SH_LOAD(t->s.leaf[k]) & ~bit(h));
	SH_STORE(t->s.mid[i], SH_LOAD(t->s.mid[i]) & ~bit(k));
	SH_STORE(t->s.top, SH_LOAD(t->s.top) & ~bit(i));
}

/* Copy the fields of slot s other than its type and serial, once each,
 * into o. */
static void copy_fields(const struct sim_obj *s, struct sim_objv *o)
{
	o->key = SH_LOAD(s->key);
	o->page = SH_LOAD(s->page);
	o->flags = SH_LOAD(s->flags);
	o->pd_handle = SH_LOAD(s->pd_handle);
	o->mr_count = SH_LOAD(s->mr_count);
	o->pd_serial = SH_LOAD(s->pd_serial);
	o->addr = SH_LOAD(s->addr);
	o->length = SH_LOAD(s->length);
	o->dm_first = SH_LOAD(s->dm_first);
	o->dm_count = SH_LOAD(s->dm_count);
}

/* Copy slot s field by field, once each, into o. */
static void copy_obj(const struct sim_obj *s, struct sim_objv *o)
{
	o->type = SH_LOAD(s->type);
	o->serial = SH_LOAD(s->serial);
	copy_fields(s, o);
}

/* Is the copy o of slot h (< SIM_MAX_OBJECTS) a well-formed live object:
 * its type known, its indices in range, and the resources it names
 * recorded as its own in the owner records (shared or a copy; each entry
 * read once)? */
static bool valid_obj(struct sim_objv *o, uint32_t h, const uint32_t *var_owner,
		      const uint32_t *dm_owner)
{
	switch (o->type) {
	case SIM_PD:
		if (o->mr_count > SIM_MAX_OBJECTS)
			o->mr_count = SIM_MAX_OBJECTS; /* a count, not an index: clamp */
		return true;
	case SIM_VAR:
		return o->page < SIM_VAR_PAGES && SH_LOAD(var_owner[o->page]) == h + 1;
	case SIM_MR:
		return o->pd_handle < SIM_MAX_OBJECTS && o->key <= 0xff;
	case SIM_DM:
		if (o->dm_first >= SIM_DM_GRANULES || o->dm_count == 0 ||
		    o->dm_count > SIM_DM_GRANULES - o->dm_first || o->length == 0 ||
		    o->length > (uint64_t)o->dm_count * SIM_DM_GRANULE)
			return false;
		for (uint32_t g = o->dm_first; g < o->dm_first + o->dm_count; g++)
			if (SH_LOAD(dm_owner[g]) != h + 1)
				return false;
		return true;
	default:
		return false;
	}
}

static bool load_obj(struct sim_table *t, uint32_t h, struct sim_objv *o)
{
	copy_obj(&t->objs[h], o);
	return valid_obj(o, h, t->s.var_owner, t->s.dm_owner);
}

/*
 * Lock-free reads of an object (sim_lookup) race honest updates: a free
 * and a re-create of the same handle may land in the middle of the copy.
 * The serial is the object's sequence word. sim_create changes it before
 * it writes any other field (fenced both sides) and publishes the type
 * last; sim_destroy unpublishes the type first. So, read in this order:
 * serial, type (acquire), the rest, serial again (after an acquire fence).
 * If both serials are the one asked for and the type is live, no field of
 * another object got in: a later object's fields come after its serial, so
 * seeing one would show its serial on the second read, and the type read
 * after a serial is never older than that serial's free. Otherwise the
 * object asked for is gone (serials never come back): NOT_FOUND.
 */
static bool load_obj_serial(struct sim_table *t, uint32_t h, uint64_t serial,
			    struct sim_objv *o)
{
	const struct sim_obj *s = &t->objs[h];
	uint64_t first = SH_LOAD(s->serial);

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	o->type = __atomic_load_n(&s->type, __ATOMIC_ACQUIRE);
	copy_fields(s, o);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	o->serial = SH_LOAD(s->serial);
	return first == serial && o->serial == serial &&
	       valid_obj(o, h, t->s.var_owner, t->s.dm_owner);
}

/* "PD", ...: a type is its kind's number (sim_table.h). */
static const char *type_name(uint32_t type)
{
	return type <= RS_NKINDS && type != SIM_FREE ? rs_kind((int)type)->word : "object";
}

bool sim_find_quiet(struct sim_table *t, uint32_t type, uint32_t handle,
		    struct sim_objv *o)
{
	return handle < SIM_MAX_OBJECTS && load_obj(t, handle, o) && o->type == type;
}

static int not_found(uint32_t type, uint32_t handle, uint64_t serial)
{
	return rs_fail(RSHARE_E_NOT_FOUND, ENOENT,
		       "simulated table has no %s with handle %u (serial %llu): "
		       "it was freed or never existed",
		       type_name(type), handle, (unsigned long long)serial);
}

int sim_find(struct sim_table *t, uint32_t type, uint32_t handle, uint64_t serial,
	     struct sim_objv *o)
{
	if (handle < SIM_MAX_OBJECTS && load_obj(t, handle, o) && o->type == type &&
	    o->serial == serial)
		return RSHARE_OK;
	return not_found(type, handle, serial);
}

/* Lookups after which a process that has not mapped the table maps it: a
 * few single reads cost less than a mapping, many do not. */
#define PREAD_LOOKUPS 8

/* Reads of a slot by pread that may disagree before we give up on it. */
#define PREAD_TRIES 4

/* The slot and the owner records, read with pread. A pread is one copy by
 * the kernel in no order we can lean on, so the slot is read twice and the
 * copies must agree (but for a PD's MR count, a hint honest registrations
 * move): a copy that mixes two objects meets, on the next read, the later
 * object whole (its serial, fields and type) or the slot free, and differs.
 * Slots that keep changing count as gone: NOT_FOUND. */
static int pread_obj(int fd, uint32_t h, struct sim_objv *o, bool *valid)
{
	struct sim_obj s, again;
	int tries = 0;
	struct {
		uint32_t var_owner[SIM_VAR_PAGES];
		uint32_t dm_owner[SIM_DM_GRANULES];
	} own;
	off_t off = (off_t)(offsetof(struct sim_table, objs) + (size_t)h * sizeof(s));

	_Static_assert(offsetof(struct sim_shared, dm_owner) ==
			       offsetof(struct sim_shared, var_owner) + sizeof(own.var_owner),
		       "owner records are contiguous");
	*valid = false;
	do {
		if (tries++ == PREAD_TRIES)
			return RSHARE_OK; /* not valid */
		if (pread(fd, &s, sizeof(s), off) != (ssize_t)sizeof(s) ||
		    pread(fd, &again, sizeof(again), off) != (ssize_t)sizeof(again))
			return rs_fail(RSHARE_E_IO, errno, "cannot read simulated object %u", h);
		s.mr_count = again.mr_count;
	} while (memcmp(&s, &again, sizeof(s)) != 0);
	copy_obj(&again, o);
	if ((o->type == SIM_VAR || o->type == SIM_DM) &&
	    pread(fd, &own, sizeof(own), (off_t)offsetof(struct sim_table, s.var_owner)) !=
		    (ssize_t)sizeof(own))
		return rs_fail(RSHARE_E_IO, errno, "cannot read the simulated owner records");
	*valid = valid_obj(o, h, own.var_owner, own.dm_owner);
	return RSHARE_OK;
}

int sim_lookup(struct sim_map *m, int fd, uint32_t type, uint32_t handle, uint64_t serial,
	       struct sim_objv *o)
{
	struct sim_table *t = __atomic_load_n(&m->t, __ATOMIC_ACQUIRE);
	bool valid = false;
	int status;

	if (handle >= SIM_MAX_OBJECTS)
		return not_found(type, handle, serial);
	if (!t && __atomic_add_fetch(&m->lookups, 1, __ATOMIC_RELAXED) > PREAD_LOOKUPS &&
	    (status = sim_map_table(m, fd)) == RSHARE_OK)
		t = __atomic_load_n(&m->t, __ATOMIC_ACQUIRE);
	if (t) {
		valid = load_obj_serial(t, handle, serial, o);
	} else {
		status = pread_obj(fd, handle, o, &valid);
		if (status)
			return status;
	}
	if (valid && o->type == type && o->serial == serial)
		return RSHARE_OK;
	return not_found(type, handle, serial);
}

/* The lowest free handle. Each level's word is read once; a level that
 * says "not full" of a word that is full, or a free bit on a used slot, is
 * corrected and the search starts over, at most ALLOC_TRIES times. */
static int find_free(struct sim_table *t, uint32_t *out)
{
	for (int tries = 0; tries < ALLOC_TRIES; tries++) {
		uint64_t top = SH_LOAD(t->s.top), mid, leaf;
		uint32_t i, k, h;

		if (top == ~0ull)
			return rs_fail(RSHARE_E_NOMEM, ENOSPC,
				       "simulated object table is full (%u objects)",
				       SIM_MAX_OBJECTS);
		i = (uint32_t)__builtin_ctzll(~top);
		mid = SH_LOAD(t->s.mid[i]);
		if (mid == ~0ull) {
			SH_STORE(t->s.top, top | bit(i));
			continue;
		}
		k = i * 64 + (uint32_t)__builtin_ctzll(~mid);
		leaf = SH_LOAD(t->s.leaf[k]);
		if (leaf == ~0ull) {
			SH_STORE(t->s.mid[i], mid | bit(k));
			continue;
		}
		h = k * 64 + (uint32_t)__builtin_ctzll(~leaf);
		if (SH_LOAD(t->objs[h].type) != SIM_FREE) {
			mark_used(t, h); /* the bitmap lied: believe the slot */
			continue;
		}
		*out = h;
		return RSHARE_OK;
	}
	return rs_fail(RSHARE_E_NOMEM, ENOSPC,
		       "simulated object table's free map is damaged (%d corrections "
		       "in one allocation)", ALLOC_TRIES);
}

static void set_intent(struct sim_table *t, uint32_t op, uint32_t handle, uint32_t pd,
		       uint32_t pd_mrs)
{
	SH_STORE(t->s.intent.handle, handle);
	SH_STORE(t->s.intent.pd_handle, pd);
	SH_STORE(t->s.intent.pd_mrs, pd_mrs);
	SH_PUBLISH(t->s.intent.op, op);
}

static void clear_intent(struct sim_table *t)
{
	SH_PUBLISH(t->s.intent.op, (uint32_t)SIM_OP_NONE);
}

/* The live-MR count of PD pd, read once and clamped; 0 if pd is no PD. */
static uint32_t pd_mrs(struct sim_table *t, uint32_t pd)
{
	uint32_t n;

	if (pd >= SIM_MAX_OBJECTS || SH_LOAD(t->objs[pd].type) != SIM_PD)
		return 0;
	n = SH_LOAD(t->objs[pd].mr_count);
	return n > SIM_MAX_OBJECTS ? SIM_MAX_OBJECTS : n;
}

static void set_pd_mrs(struct sim_table *t, uint32_t pd, uint32_t n)
{
	if (pd < SIM_MAX_OBJECTS && SH_LOAD(t->objs[pd].type) == SIM_PD)
		SH_STORE(t->objs[pd].mr_count, n);
}

/* Point the resources an object names (VAR page, DM granules) at owner
 * (handle + 1, or 0 to release those held by handle + 1 == was). */
static void own_resources(struct sim_table *t, const struct sim_objv *o, uint32_t owner)
{
	if (o->type == SIM_VAR && o->page < SIM_VAR_PAGES)
		SH_STORE(t->s.var_owner[o->page], owner);
	if (o->type == SIM_DM && o->dm_first < SIM_DM_GRANULES &&
	    o->dm_count <= SIM_DM_GRANULES - o->dm_first)
		for (uint32_t g = o->dm_first; g < o->dm_first + o->dm_count; g++)
			SH_STORE(t->s.dm_owner[g], owner);
}

int sim_create(struct sim_table *t, struct sim_objv *o, uint32_t *handle)
{
	struct sim_obj *s;
	uint64_t serial;
	uint32_t h = 0, pd = NO_PD, mrs = 0;
	int status = find_free(t, &h);

	if (status)
		return status;
	s = &t->objs[h];
	if (o->type == SIM_MR) {
		pd = o->pd_handle;
		mrs = pd_mrs(t, pd);
	}
	/* Each step below leaves a state sim_repair can finish or undo. */
	set_intent(t, SIM_OP_ALLOC, h, pd, mrs);
	serial = SH_LOAD(t->s.next_serial);
	if (serial == 0)
		serial = 1;
	SH_STORE(t->s.next_serial, serial + 1);
	o->serial = serial;
	o->key = o->type == SIM_MR ? (uint32_t)(serial & 0xff) : 0;
	o->mr_count = 0;
	own_resources(t, o, h + 1);
	/* The slot's sequence word first (load_obj_serial): after the free
	 * that emptied the slot, before any other field. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	SH_STORE(s->serial, o->serial);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	SH_STORE(s->key, o->key);
	SH_STORE(s->page, o->page);
	SH_STORE(s->flags, o->flags);
	SH_STORE(s->pd_handle, o->pd_handle);
	SH_STORE(s->mr_count, 0u);
	SH_STORE(s->pd_serial, o->pd_serial);
	SH_STORE(s->addr, o->addr);
	SH_STORE(s->length, o->length);
	SH_STORE(s->dm_first, o->dm_first);
	SH_STORE(s->dm_count, o->dm_count);
	SH_PUBLISH(s->type, o->type);
	mark_used(t, h);
	if (pd != NO_PD)
		set_pd_mrs(t, pd, mrs < SIM_MAX_OBJECTS ? mrs + 1 : mrs);
	clear_intent(t);
	*handle = h;
	return RSHARE_OK;
}

void sim_destroy(struct sim_table *t, uint32_t handle, const struct sim_objv *o)
{
	uint32_t pd = NO_PD, mrs = 0;

	if (handle >= SIM_MAX_OBJECTS)
		return;
	if (o->type == SIM_MR) {
		pd = o->pd_handle;
		mrs = pd_mrs(t, pd);
		mrs = mrs ? mrs - 1 : 0;
	}
	set_intent(t, SIM_OP_FREE, handle, pd, mrs);
	SH_PUBLISH(t->objs[handle].type, (uint32_t)SIM_FREE); /* unpublish first */
	own_resources(t, o, 0);
	mark_free(t, handle);
	if (pd != NO_PD)
		set_pd_mrs(t, pd, mrs);
	clear_intent(t);
}

/* The holder that wrote the intent died (or a peer wrote it): make its one
 * object either whole and live or gone, its resources and bitmap bits
 * agreeing, and its PD's MR count right. Bounded work: one slot, the 64 VAR
 * pages and the 64 DM granules. */
void sim_repair(struct sim_table *t)
{
	uint32_t h = SH_LOAD(t->s.intent.handle);
	uint32_t pd = SH_LOAD(t->s.intent.pd_handle);
	uint32_t mrs = SH_LOAD(t->s.intent.pd_mrs);
	struct sim_objv o;
	bool live;

	if (h >= SIM_MAX_OBJECTS) {
		clear_intent(t);
		return;
	}
	live = load_obj(t, h, &o);
	if (live) {
		uint64_t next = SH_LOAD(t->s.next_serial);

		mark_used(t, h);
		if (next <= o.serial && o.serial != UINT64_MAX)
			SH_STORE(t->s.next_serial, o.serial + 1);
	} else {
		SH_PUBLISH(t->objs[h].type, (uint32_t)SIM_FREE);
		for (uint32_t p = 0; p < SIM_VAR_PAGES; p++)
			if (SH_LOAD(t->s.var_owner[p]) == h + 1)
				SH_STORE(t->s.var_owner[p], 0u);
		for (uint32_t g = 0; g < SIM_DM_GRANULES; g++)
			if (SH_LOAD(t->s.dm_owner[g]) == h + 1)
				SH_STORE(t->s.dm_owner[g], 0u);
		mark_free(t, h);
	}
	if (pd != NO_PD) {
		if (mrs > SIM_MAX_OBJECTS)
			mrs = SIM_MAX_OBJECTS;
		set_pd_mrs(t, pd, mrs + (live && o.type == SIM_MR && o.pd_handle == pd));
	}
	clear_intent(t);
}
