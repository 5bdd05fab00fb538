/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The handle table (see internal.h for the token and the pin protocol).
 *
 * Locked atomic operations per call, uncontended (x86 `lock`-prefixed
 * instructions; plain loads and release stores are not counted, they are
 * ordinary moves on x86):
 *   rs_pin + rs_unpin                  2 (CAS, fetch_sub)
 *   rs_slot_reserve / rs_slot_publish  0 (per-thread cache; a release store)
 *   rs_retire_begin + rs_retire_commit 1 (CAS; a release store, cache push)
 * so an object call (export, handle, attrs) costs 2, import and alloc 1
 * (the device pin the object keeps, object.c), unimport and free 2 (the
 * retire, the device unpin). The shared free list is touched once per
 * CACHE_BATCH reserves or releases, one CAS for a whole batch.
 * tests/c/test_atomics.c counts them in the compiled library, per call.
 *
 * Free slots: each thread keeps up to CACHE_MAX in a thread-local cache
 * and trades them with the shared free list CACHE_BATCH at a time. The
 * shared list is a Treiber stack of batches (each a chain of slots through
 * next_free, the batches chained through next_batch); a thread that exits
 * gives its cache back (a pthread key destructor). A forked child keeps
 * the forking thread's cache; the caches of the parent's other threads are
 * lost to it (at most CACHE_MAX free slots each).
 *
 * Generations: a slot's generation goes up by one each time an object in
 * it dies. A slot whose generation is at the top (2^32 - 1) is retired for
 * good when that object dies instead of wrapping, so a handle, however
 * old, never names a live object again. That costs one slot per 2^32
 * objects made in it.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

_Static_assert(sizeof(void *) == 8, "handle tokens need 64-bit pointers");

#define CHUNK_SHIFT 10
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define MAX_CHUNKS 4096u /* 4 Mi live objects */

#define CACHE_MAX 64   /* free slots a thread keeps */
#define CACHE_BATCH 32 /* slots moved to or from the shared list at once */
_Static_assert(CHUNK_SLOTS % CACHE_BATCH == 0, "chunks split into whole batches");
_Static_assert(CACHE_MAX >= 2 * CACHE_BATCH, "a full cache can give a batch back");

#define ST_LIVE (1ull << 31)
#define ST_DYING (1ull << 30)
#define ST_PINS ((1ull << 30) - 1)
#define ST_GEN(s) ((uint32_t)((s) >> 32))
#define GEN_LAST UINT32_MAX /* a slot dying at this generation is retired */

#define TOK_INDEX_MASK 0x0fffffffu

static _Atomic(struct rs_slot *) chunks[MAX_CHUNKS];
static atomic_uint nchunks;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
/* Slots of the newest chunk made ready so far (under grow_lock): a chunk is
 * made ready a batch at a time, see carve_batch. */
static uint32_t carved;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t cache_key;

/* Treiber stack of batches of free slots: tag:32 | (first index + 1):32.
 * The tag changes on every push and pop, which rules out ABA. */
static _Atomic uint64_t free_head;

struct slot_cache {
	uint32_t n;
	bool registered; /* the exit destructor is armed for this thread */
	uint32_t idx[CACHE_MAX];
};
static __thread struct slot_cache cache;

static inline struct rs_slot *slot_at(uint32_t index)
{
	uint32_t c = index >> CHUNK_SHIFT;
	struct rs_slot *chunk;

	if (c >= MAX_CHUNKS)
		return NULL;
	chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);
	return chunk ? &chunk[index & (CHUNK_SLOTS - 1)] : NULL;
}

/* Push the n (>= 1) slots of idx onto the shared list as one batch. */
static void push_batch(const uint32_t *idx, uint32_t n)
{
	struct rs_slot *first = slot_at(idx[0]);
	uint64_t head = atomic_load_explicit(&free_head, memory_order_relaxed), next;

	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&slot_at(idx[i])->next_free,
				      i + 1 < n ? idx[i + 1] + 1 : 0, memory_order_relaxed);
	do {
		atomic_store_explicit(&first->next_batch, (uint32_t)head,
				      memory_order_relaxed);
		next = ((head >> 32) + 1) << 32 | (uint64_t)(idx[0] + 1);
	} while (!atomic_compare_exchange_weak_explicit(&free_head, &head, next,
							memory_order_release,
							memory_order_relaxed));
}

/* Pop one batch into the (empty) cache; false if the shared list is empty. */
static bool pop_batch(struct slot_cache *c)
{
	uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire), next;
	uint32_t top, i;

	do {
		top = (uint32_t)head;
		if (top == 0)
			return false;
		/* May read a batch another thread just took: the tag then
		 * fails the CAS and the value is not used. */
		next = ((head >> 32) + 1) << 32 |
		       atomic_load_explicit(&slot_at(top - 1)->next_batch,
					    memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&free_head, &head, next,
							memory_order_acquire,
							memory_order_acquire));
	/* The batch is ours now. Keep it in the cache in reverse, so slots
	 * come out in chain order (low indices first after a grow). */
	c->n = 0;
	for (i = top; i && c->n < CACHE_MAX;
	     i = atomic_load_explicit(&slot_at(i - 1)->next_free, memory_order_relaxed))
		c->n++;
	for (uint32_t k = c->n; k-- > 0;) {
		c->idx[k] = top - 1;
		top = atomic_load_explicit(&slot_at(top - 1)->next_free, memory_order_relaxed);
	}
	return true;
}

/* A thread's exit: its cached slots go back to the shared list. */
static void cache_flush(void *arg)
{
	struct slot_cache *c = arg;

	for (uint32_t i = 0; i < c->n; i += CACHE_BATCH)
		push_batch(&c->idx[i], c->n - i < CACHE_BATCH ? c->n - i : CACHE_BATCH);
	c->n = 0;
	c->registered = false; /* a later destructor's call re-arms it */
}

/* A fork while another thread grows the table must not leave the child a
 * lock nobody will release. */
static void grow_prepare(void)
{
	pthread_mutex_lock(&grow_lock);
}

static void grow_release(void)
{
	pthread_mutex_unlock(&grow_lock);
}

static _Atomic uint32_t fork_gen; /* forks in this process's ancestry */


static inline bool is_object(int kind)
{
	return rs_kind_of_slot(kind) != 0;
}

/* In a forked child, before anything else runs: only the forking thread
 * exists, so every pin held by another thread of the parent (in the middle
 * of a call, which will never finish here) is void, and so is the count of
 * an object being made or released there. Rebuild pins and counts from the
 * live objects alone: each holds its device's pin, each MR counts in its
 * PD. Without this a child could wait forever to release a handle that
 * another thread of the parent was using at the fork. */
static void fork_child(void)
{
	struct rs_slot *slot;
	uint32_t cursor;

	grow_release();
	atomic_store_explicit(&fork_gen, atomic_load(&fork_gen) + 1, memory_order_relaxed);
	for (cursor = 0; (slot = rs_slot_next(&cursor));) {
		uint64_t st = atomic_load_explicit(&slot->state, memory_order_relaxed);

		/* Written only where there is something to clear: a slot not
		 * yet readied (state 0) sits on a page the child has not
		 * touched, which a store would make it copy (~50 faults per
		 * chunk). */
		if (st & ST_PINS)
			atomic_store_explicit(&slot->state, st & ~ST_PINS, memory_order_relaxed);
		if ((st & ST_LIVE) && is_object(atomic_load(&slot->kind)))
			atomic_store_explicit(&slot->u.obj.users, 0, memory_order_relaxed);
	}
	for (cursor = 0; (slot = rs_slot_next(&cursor));) {
		uint64_t st = atomic_load_explicit(&slot->state, memory_order_relaxed);
		struct rs_obj *obj = &slot->u.obj;

		if (!(st & ST_LIVE) || (st & ST_DYING) || !is_object(atomic_load(&slot->kind)))
			continue;
		if (obj->dev_slot)
			atomic_fetch_add_explicit(&obj->dev_slot->state, 1, memory_order_relaxed);
		if (obj->parent)
			atomic_fetch_add_explicit(&obj->parent->users, 1, memory_order_relaxed);
	}
}

static void init_once(void)
{
	pthread_atfork(grow_prepare, grow_release, fork_child);
	pthread_key_create(&cache_key, cache_flush);
}

/* The first table use on a thread arms the exit destructor. */
static inline struct slot_cache *my_cache(void)
{
	struct slot_cache *c = &cache;

	if (__builtin_expect(!c->registered, 0)) {
		pthread_once(&once, init_once);
		pthread_setspecific(cache_key, c);
		c->registered = true;
	}
	return c;
}

/* Make the next batch of the newest chunk's slots ready (generation 1,
 * free) and put it on the free list, with grow_lock held. A chunk is
 * 1024 slots, 53 pages: readying it whole touched every page, ~50 page
 * faults paid by a process's first object (its first share). A slot not
 * yet readied stays as calloc left it, generation 0 and not live, which no
 * handle names (generations start at 1), so lookups refuse it as before. */
static void carve_batch(void)
{
	uint32_t c = atomic_load_explicit(&nchunks, memory_order_relaxed) - 1, idx[CACHE_BATCH];
	struct rs_slot *chunk = atomic_load_explicit(&chunks[c], memory_order_relaxed);

	for (uint32_t i = 0; i < CACHE_BATCH; i++) {
		struct rs_slot *slot = &chunk[carved + i];

		slot->index = (c << CHUNK_SHIFT) | (carved + i);
		atomic_store_explicit(&slot->state, 1ull << 32, memory_order_relaxed);
		idx[i] = slot->index;
	}
	carved += CACHE_BATCH;
	push_batch(idx, CACHE_BATCH); /* releases the stores above */
}

/* Put a batch of free slots on the list (from the newest chunk, or a new
 * one), unless another thread refilled the list first. */
static int grow(void)
{
	int status = RSHARE_OK;

	pthread_once(&once, init_once);
	pthread_mutex_lock(&grow_lock);
	if ((uint32_t)atomic_load(&free_head) == 0) {
		uint32_t c = atomic_load(&nchunks);
		struct rs_slot *chunk;

		if (c > 0 && carved < CHUNK_SLOTS) {
			carve_batch();
			goto out;
		}
		if (c == MAX_CHUNKS) {
			status = rs_fail(RSHARE_E_NOMEM, 0,
					 "too many live handles (%u)",
					 MAX_CHUNKS * CHUNK_SLOTS);
			goto out;
		}
		chunk = calloc(CHUNK_SLOTS, sizeof(*chunk));
		if (!chunk) {
			status = rs_fail(RSHARE_E_NOMEM, ENOMEM,
					 "cannot allocate handle slots");
			goto out;
		}
		atomic_store_explicit(&chunks[c], chunk, memory_order_release);
		atomic_store(&nchunks, c + 1);
		carved = 0;
		carve_batch();
	}
out:
	pthread_mutex_unlock(&grow_lock);
	return status;
}

int rs_slot_reserve(struct rs_slot **slot)
{
	struct slot_cache *c = my_cache();

	while (c->n == 0 && !pop_batch(c)) {
		int status = grow();
		if (status)
			return status;
	}
	*slot = slot_at(c->idx[--c->n]); /* the caller initialises u in full */
	return RSHARE_OK;
}

/* Give a free slot back: to this thread's cache, spilling a batch to the
 * shared list when the cache is full. */
static void release_slot(struct rs_slot *slot)
{
	struct slot_cache *c = my_cache();

	if (c->n == CACHE_MAX) {
		c->n -= CACHE_BATCH;
		push_batch(&c->idx[c->n], CACHE_BATCH);
	}
	c->idx[c->n++] = slot->index;
}

void *rs_slot_publish(struct rs_slot *slot, int kind)
{
	uint64_t gen = ST_GEN(atomic_load_explicit(&slot->state, memory_order_relaxed));

	atomic_store_explicit(&slot->kind, (uint8_t)kind, memory_order_relaxed);
	slot->born = atomic_load_explicit(&fork_gen, memory_order_relaxed);
	atomic_store_explicit(&slot->state, gen << 32 | ST_LIVE, memory_order_release);
	return (void *)(uintptr_t)(gen << 32 | (uint64_t)kind << 28 |
				   (uint64_t)(slot->index + 1));
}

void rs_slot_discard(struct rs_slot *slot)
{
	release_slot(slot); /* never published: its generation is unused */
}

/* Decode a token; NULL if it cannot name a slot. */
static struct rs_slot *lookup(const void *h, int kind, uint32_t *gen)
{
	uint64_t v = (uint64_t)(uintptr_t)h;
	uint32_t index = ((uint32_t)v & TOK_INDEX_MASK);

	if (index == 0 || (((uint32_t)v >> 28) & 0xf) != (uint32_t)kind)
		return NULL;
	*gen = (uint32_t)(v >> 32);
	return slot_at(index - 1);
}

static const char *kind_name(int kind)
{
	return rs_obj_kind_name(kind);
}

static int stale(const void *h, int kind)
{
	return rs_fail(RSHARE_E_STALE, 0,
		       "%s handle %p is not live (already freed, unimported or closed)",
		       kind_name(kind), h);
}

static inline bool usable(uint64_t s, uint32_t gen, const struct rs_slot *slot,
			  int kind)
{
	return ST_GEN(s) == gen && (s & ST_LIVE) && !(s & ST_DYING) &&
	       atomic_load_explicit(&slot->kind, memory_order_relaxed) == kind;
}

enum claim_mode {
	CLAIM_PIN,           /* add a pin */
	CLAIM_RETIRE,        /* mark dying */
	CLAIM_RETIRE_IF_IDLE /* mark dying, only if no pin is held */
};

/* Find the live slot behind h and change its state in one step as mode
 * says. Fails, changing nothing, if h is not live (STALE) or, for
 * CLAIM_RETIRE_IF_IDLE, pinned (BUSY, with the pin count in *pins). */
static inline int claim(const void *h, int kind, enum claim_mode mode,
			struct rs_slot **out, uint64_t *pins)
{
	struct rs_slot *slot;
	uint32_t gen;
	uint64_t s;

	if (!h)
		return rs_fail(RSHARE_E_INVAL, 0, "%s handle is NULL", kind_name(kind));
	slot = lookup(h, kind, &gen);
	if (!slot)
		return stale(h, kind);
	s = atomic_load_explicit(&slot->state, memory_order_acquire);
	do {
		if (!usable(s, gen, slot, kind))
			return stale(h, kind);
		if (mode == CLAIM_RETIRE_IF_IDLE && (s & ST_PINS)) {
			*pins = s & ST_PINS;
			return RSHARE_E_BUSY;
		}
	} while (!atomic_compare_exchange_weak_explicit(&slot->state, &s,
							mode == CLAIM_PIN ? s + 1 : s | ST_DYING,
							memory_order_acquire,
							memory_order_acquire));
	*out = slot;
	return RSHARE_OK;
}

int rs_pin(const void *h, int kind, struct rs_slot **out)
{
	return claim(h, kind, CLAIM_PIN, out, NULL);
}

void rs_unpin(struct rs_slot *slot)
{
	atomic_fetch_sub_explicit(&slot->state, 1, memory_order_release);
}

int rs_retire_begin(const void *h, int kind, struct rs_slot **out)
{
	int status = claim(h, kind, CLAIM_RETIRE, out, NULL);

	if (status)
		return status;
	/* Pins are held only for the length of one call: wait them out. */
	while (atomic_load_explicit(&(*out)->state, memory_order_acquire) & ST_PINS)
		sched_yield();
	return RSHARE_OK;
}

int rs_retire_if_idle(const void *h, int kind, struct rs_slot **out, uint64_t *pins)
{
	return claim(h, kind, CLAIM_RETIRE_IF_IDLE, out, pins);
}

void rs_retire_commit(struct rs_slot *slot)
{
	uint32_t gen = ST_GEN(atomic_load_explicit(&slot->state, memory_order_relaxed));

	if (gen == GEN_LAST) {
		/* Out of generations: the slot stays dead (not live, never
		 * reused), so every handle that named it stays stale. */
		atomic_store_explicit(&slot->state, (uint64_t)GEN_LAST << 32,
				      memory_order_release);
		return;
	}
	atomic_store_explicit(&slot->state, (uint64_t)(gen + 1) << 32, memory_order_release);
	release_slot(slot);
}

void rs_retire_cancel(struct rs_slot *slot)
{
	atomic_fetch_and(&slot->state, ~ST_DYING);
}

bool rs_slot_inherited(const struct rs_slot *slot)
{
	return slot->born != atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

struct rs_slot *rs_slot_next(uint32_t *cursor)
{
	uint32_t n = atomic_load_explicit(&nchunks, memory_order_acquire);

	if (*cursor >= n * CHUNK_SLOTS)
		return NULL;
	return slot_at((*cursor)++);
}

void *rs_slot_handle(struct rs_slot *slot, int kind)
{
	uint64_t st = atomic_load_explicit(&slot->state, memory_order_acquire);

	if (!(st & ST_LIVE) || (st & ST_DYING) ||
	    atomic_load_explicit(&slot->kind, memory_order_relaxed) != kind)
		return NULL;
	return (void *)(uintptr_t)((uint64_t)ST_GEN(st) << 32 | (uint64_t)kind << 28 |
				   (uint64_t)(slot->index + 1));
}

#ifdef RSHARE_TEST_HOOKS
int rs_test_slot_set_gen(const void *h, int kind, uint32_t gen)
{
	uint32_t old;
	struct rs_slot *slot = h ? lookup(h, kind, &old) : NULL;

	if (!slot || (atomic_load(&slot->state) & (ST_LIVE | ST_DYING | ST_PINS)) ||
	    gen == 0)
		return RSHARE_E_INVAL;
	atomic_store(&slot->state, (uint64_t)gen << 32);
	return RSHARE_OK;
}
#endif
