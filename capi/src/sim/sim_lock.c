/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The table lock: a 64-bit word in shared memory, no glibc internals.
 *
 * Untrusted-memory rule (sim_table.h): every value of the word is handled.
 *
 *   0        free: take it with one CAS (the uncontended path)
 *   v != 0   held by the live process whose liveness byte is v's
 *
 * Liveness comes from the kernel, not from pids: a process that locks a
 * table first picks a random 60-bit value v (its "holder value") and takes
 * an OFD read lock on byte sim_live_offset(v) of the memfd (far past its
 * end; locks there touch no data) through its own open file description
 * (sim_pages.c), and holds it for its life: the kernel drops it when the
 * process dies or execs, whatever PID namespace either side is in, however
 * /proc is mounted, and a reused pid cannot inherit it. A waiter asks with
 * F_OFD_GETLK whether anyone holds v's byte; nobody (or v is its own value:
 * no thread of ours can hold the word, we hold the local mutex) means the
 * holder is gone and the waiter takes the lock over by CAS. Whatever the
 * holder left half done is then finished or undone from the intent record
 * (sim_repair). The byte is taken before the first CAS, so a live holder's
 * byte is always held. Values are random, so two live processes share one
 * with a chance of 2^-60 per pair.
 *
 * Threads of one process are serialised first by the process-local mutex of
 * the table's registry entry, so the shared word only has to tell processes
 * apart. A waiter spins briefly, then sleeps in FUTEX_WAIT on the low half
 * with a short timeout and asks again. A live owner that keeps it longer
 * than the bound gets the waiter RSHARE_E_BUSY. The first lock of a process
 * reopens the memfd (its own description) before it touches the word, and
 * without waiting on a lease (O_NONBLOCK): a peer's write lease then costs
 * retries within the bound, never a wait with the table locked.
 *
 * Dependencies go one way: this file calls the table code (sim_repair) and
 * the mapping (sim_map.c) and the pages (sim_pages_ready); none of them
 * calls back into the lock (the liveness byte's offset is a layout fact in
 * sim_table.h), so the lock can be read, and changed, on its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>

#if defined(__SANITIZE_THREAD__)
#define RS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RS_TSAN 1
#endif
#endif
#ifndef RS_TSAN
#define RS_TSAN 0
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "sim/sim_table.h"
#include "util/error.h"

#define SPINS 200
#define NAP_NS 2000000L /* 2 ms between liveness checks */

static pthread_once_t bound_once = PTHREAD_ONCE_INIT;
static unsigned bound_ms = SIM_LOCK_BOUND_MS;

static void read_bound(void)
{
	const char *e = getenv("RSHARE_SIM_LOCK_MS");
	char *end;
	unsigned long v;

	if (!e || !*e)
		return;
	v = strtoul(e, &end, 10);
	if (*end == '\0' && v >= 1 && v <= 600000)
		bound_ms = (unsigned)v;
}

unsigned sim_lock_bound_ms(void)
{
	pthread_once(&bound_once, read_bound);
	return bound_ms;
}

/* May the holder recorded in v still hold the lock? Only if a description
 * other than ours holds v's liveness byte. */
static bool holder_alive(struct sim_map *m, uint64_t v)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = sim_live_offset(v), .l_len = 1 };

	if (v == m->lock_value)
		return false;
	/* A failed probe proves nothing: assume alive (the bound holds). */
	return fcntl(m->ofd, F_OFD_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool try_take(uint64_t *word, uint64_t expect, uint64_t mine)
{
	return __atomic_compare_exchange_n(word, &expect, mine, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* The futex is the low half of the little-endian word. */
static uint32_t *futex_word(struct sim_table *t)
{
	return (uint32_t *)(void *)&t->s.lock;
}

/* deadline: CLOCK_MONOTONIC ns, or 0 for "the bound from now". */
static int lock_slow(struct sim_map *m, uint64_t deadline)
{
	struct sim_table *t = m->t;
	uint64_t v, mine = m->lock_value;

	if (!deadline)
		deadline = now_ns() + (uint64_t)sim_lock_bound_ms() * 1000000ull;
	for (int i = 0; i < SPINS; i++) {
		v = SH_LOAD(t->s.lock);
		if (v == 0 && try_take(&t->s.lock, 0, mine))
			return RSHARE_OK;
		__builtin_ia32_pause();
	}
	for (;;) {
		struct timespec nap = { 0, NAP_NS };
		bool ownerless;

		v = SH_LOAD(t->s.lock);
		ownerless = v == 0 || !holder_alive(m, v);
		/* A peer that rewrites the word between our look and our CAS
		 * makes every take-over fail: the deadline holds on this path
		 * too, or it could keep us here for as long as it goes on. */
		if (ownerless && try_take(&t->s.lock, v, mine))
			return RSHARE_OK;
		if (now_ns() >= deadline)
			return rs_fail(RSHARE_E_BUSY, ETIMEDOUT,
				       "simulated object table locked by another process "
				       "(alive: it holds the liveness lock of holder value "
				       "0x%llx) for %u ms", (unsigned long long)v,
				       sim_lock_bound_ms());
		if (ownerless)
			continue; /* nobody to wait for: look again at once */
		__atomic_fetch_add(&t->s.waiters, 1, __ATOMIC_RELAXED);
		/* Any result (woken, value changed, timed out, interrupted)
		 * just means: look again. */
		syscall(SYS_futex, futex_word(t), FUTEX_WAIT, (uint32_t)v, &nap, NULL, 0);
		__atomic_fetch_sub(&t->s.waiters, 1, __ATOMIC_RELAXED);
	}
}

/* The process-local mutex, within the same bound: another thread of this
 * process may be waiting out a stuck peer while holding it. */
static int lock_local(struct sim_map *m, uint64_t *deadline)
{
	struct timespec until;
	int err;

	if (pthread_mutex_trylock(&m->local) == 0)
		return RSHARE_OK;
	*deadline = now_ns() + (uint64_t)sim_lock_bound_ms() * 1000000ull;
	until.tv_sec = (time_t)(*deadline / 1000000000ull);
	until.tv_nsec = (long)(*deadline % 1000000000ull);
#if RS_TSAN
	/* ThreadSanitizer (clang 14) does not intercept clocklock and would
	 * take the mutex for unlocked: wait the same bound on the wall clock. */
	{
		struct timespec wall;
		uint64_t ns;

		clock_gettime(CLOCK_REALTIME, &wall);
		ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec +
		     (uint64_t)sim_lock_bound_ms() * 1000000ull;
		until.tv_sec = (time_t)(ns / 1000000000ull);
		until.tv_nsec = (long)(ns % 1000000000ull);
		err = pthread_mutex_timedlock(&m->local, &until);
	}
#else
	err = pthread_mutex_clocklock(&m->local, CLOCK_MONOTONIC, &until);
#endif
	if (err)
		return rs_fail(RSHARE_E_BUSY, err,
			       "simulated object table locked by another process for %u ms "
			       "(another thread of this one is waiting for it)",
			       sim_lock_bound_ms());
	return RSHARE_OK;
}

/* A random holder value: never 0, nor 0 in the futex half. */
static uint64_t random_value(void)
{
	uint64_t v = 0;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 40 ^
		    (uint64_t)(uintptr_t)&v;
	}
	return (v & SIM_LIVE_MASK) | 1;
}

/* This process's holder value for m's table, its liveness byte held
 * through its own description (taken first, without waiting on a lease,
 * retried until the deadline). */
static int take_liveness(struct sim_map *m, int fd, uint64_t *deadline)
{
	int status;

	if (!*deadline)
		*deadline = now_ns() + (uint64_t)sim_lock_bound_ms() * 1000000ull;
	while ((status = sim_pages_ready(m, fd)) != RSHARE_OK) {
		struct timespec nap = { 0, 10000000L };

		if (rs_last_errno() != EWOULDBLOCK || now_ns() >= *deadline)
			return rs_last_errno() == EWOULDBLOCK
				       ? rs_fail(RSHARE_E_BUSY, EWOULDBLOCK,
						 "another process holds a lease on the simulated "
						 "table's memfd (waited %u ms to reopen it)",
						 sim_lock_bound_ms())
				       : status;
		nanosleep(&nap, NULL);
	}
	for (int i = 0; i < 8; i++) {
		uint64_t v = random_value();
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
				    .l_start = sim_live_offset(v), .l_len = 1 };

		if (fcntl(m->ofd, F_OFD_SETLK, &fl) == 0) {
			m->lock_value = v;
			return RSHARE_OK;
		}
	}
	return rs_fail(RSHARE_E_IO, errno, "cannot take a liveness lock on the simulated table");
}

int sim_lock(struct sim_map *m, int fd)
{
	uint64_t deadline = 0;
	int status = lock_local(m, &deadline);

	if (status)
		return status;
	if (!m->t && (status = sim_map_table_locked(m, fd)) != RSHARE_OK)
		goto fail;
	if (!m->lock_value && (status = take_liveness(m, fd, &deadline)) != RSHARE_OK)
		goto fail;
	if (!try_take(&m->t->s.lock, 0, m->lock_value) &&
	    (status = lock_slow(m, deadline)) != RSHARE_OK)
		goto fail;
	/* A holder that died mid-update (or a peer's scribble) left an
	 * intent: settle it before anything else reads the table. */
	if (SH_LOAD(m->t->s.intent.op) != SIM_OP_NONE)
		sim_repair(m->t);
	return RSHARE_OK;
fail:
	pthread_mutex_unlock(&m->local);
	return status;
}

void sim_unlock(struct sim_map *m)
{
	struct sim_table *t = m->t;

	/* Release only if it is still ours: a peer may have overwritten it,
	 * and then it is not ours to clear. */
	uint64_t mine = m->lock_value;

	if (__atomic_compare_exchange_n(&t->s.lock, &mine, 0, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED) &&
	    SH_LOAD(t->s.waiters) != 0)
		syscall(SYS_futex, futex_word(t), FUTEX_WAKE, 1, NULL, NULL, 0);
	pthread_mutex_unlock(&m->local);
}
