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

#define ST_LIVE (1ull << 31)
#define ST_DYING (1ull << 30)
#define ST_PINS ((1ull << 30) - 1)
#define ST_GEN(s) ((uint32_t)((s) >> 32))

#define TOK_INDEX_MASK 0x0fffffffu

static _Atomic(struct rs_slot *) chunks[MAX_CHUNKS];
static atomic_uint nchunks;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

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

static void register_atfork(void)
{
	pthread_atfork(grow_prepare, grow_release, grow_release);
}
/* Treiber stack of free slots: tag:32 | (index + 1):32. The tag changes on
 * every push and pop, which rules out ABA. */
static _Atomic uint64_t free_head;

static inline struct rs_slot *slot_at(uint32_t index)
{
	uint32_t c = index >> CHUNK_SHIFT;
	struct rs_slot *chunk;

	if (c >= MAX_CHUNKS)
		return NULL;
	chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);
	return chunk ? &chunk[index & (CHUNK_SLOTS - 1)] : NULL;
}

static inline uint32_t slot_index(const struct rs_slot *slot)
{
	return slot->index;
}

static void push_free(uint32_t index)
{
	struct rs_slot *slot = slot_at(index);
	uint64_t head = atomic_load(&free_head), next;

	do {
		atomic_store_explicit(&slot->next_free, (uint32_t)head,
				      memory_order_relaxed);
		next = ((head >> 32) + 1) << 32 | (uint64_t)(index + 1);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
}

static int pop_free(uint32_t *index)
{
	uint64_t head = atomic_load(&free_head), next;

	do {
		uint32_t top = (uint32_t)head;
		if (top == 0)
			return 0;
		next = ((head >> 32) + 1) << 32 |
		       atomic_load_explicit(&slot_at(top - 1)->next_free,
					    memory_order_relaxed);
	} while (!atomic_compare_exchange_weak(&free_head, &head, next));
	*index = (uint32_t)head - 1;
	return 1;
}

static int grow(void)
{
	int status = RSHARE_OK;

	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&grow_lock);
	if ((uint32_t)atomic_load(&free_head) == 0) {
		uint32_t c = atomic_load(&nchunks);
		struct rs_slot *chunk;

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
		for (uint32_t i = 0; i < CHUNK_SLOTS; i++) {
			atomic_init(&chunk[i].state, 1ull << 32);
			chunk[i].index = (c << CHUNK_SHIFT) | i;
		}
		atomic_store_explicit(&chunks[c], chunk, memory_order_release);
		atomic_store(&nchunks, c + 1);
		/* Push in reverse so low indices come out first. */
		for (uint32_t i = CHUNK_SLOTS; i-- > 0;)
			push_free((c << CHUNK_SHIFT) | i);
	}
out:
	pthread_mutex_unlock(&grow_lock);
	return status;
}

int rs_slot_reserve(struct rs_slot **slot)
{
	uint32_t index;

	while (!pop_free(&index)) {
		int status = grow();
		if (status)
			return status;
	}
	*slot = slot_at(index); /* the caller initialises u in full */
	return RSHARE_OK;
}

void *rs_slot_publish(struct rs_slot *slot, int kind)
{
	uint64_t gen = ST_GEN(atomic_load(&slot->state));
	uint32_t index = slot_index(slot);

	atomic_store_explicit(&slot->kind, (uint8_t)kind, memory_order_relaxed);
	atomic_store_explicit(&slot->state, gen << 32 | ST_LIVE,
			      memory_order_release);
	return (void *)(uintptr_t)(gen << 32 | (uint64_t)kind << 28 |
				   (uint64_t)(index + 1));
}

void rs_slot_discard(struct rs_slot *slot)
{
	push_free(slot_index(slot));
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
	return kind == RS_OBJ_DEVICE ? "device" : kind == RS_OBJ_PD ? "PD" : "VAR";
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
static int claim(const void *h, int kind, enum claim_mode mode, struct rs_slot **out,
		 uint64_t *pins)
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
	uint64_t gen = ST_GEN(atomic_load(&slot->state)) + 1u;

	if ((uint32_t)gen == 0)
		gen = 1; /* keep generation 0 unused */
	atomic_store_explicit(&slot->state, (uint64_t)(uint32_t)gen << 32,
			      memory_order_release);
	push_free(slot_index(slot));
}

void rs_retire_cancel(struct rs_slot *slot)
{
	atomic_fetch_and(&slot->state, ~ST_DYING);
}
