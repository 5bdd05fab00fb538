/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The table lock: a 64-bit word in shared memory, no glibc internals.
 *
 * Untrusted-memory rule (sim_table.h): every value of the word is handled.
 *
 *   0                  free: take it with one CAS (the uncontended path)
 *   tag << 32 | pid    held by process pid whose start-time tag is tag
 *
 * Threads of one process are serialised first by the process-local mutex of
 * the table's registry entry, so the shared word only has to tell processes
 * apart. A waiter spins briefly, then sleeps in FUTEX_WAIT on the low half
 * (the pid) with a short timeout, and after each sleep asks whether the
 * owner still exists: not a plausible pid, our own pid (no thread of ours can
 * hold it: we hold the local mutex), no such process (kill(pid, 0) gives
 * ESRCH), a zombie (killed, not yet reaped: kill() still finds it) or a
 * process of another start time (the pid was reused) all mean
 * nobody holds it, and the waiter takes it over by CAS. Whatever the holder
 * left half done is then finished or undone from the intent record
 * (sim_repair). A live owner that keeps it longer than the bound gets the
 * waiter RSHARE_E_BUSY. kill() is only ever called with signal 0 and a pid
 * in [1, PID_MAX_LIMIT]: it never sends anything.
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "sim/sim_table.h"
#include "util/error.h"

#define PID_LIMIT 4194304 /* the kernel's PID_MAX_LIMIT */
#define SPINS 200
#define NAP_NS 2000000L /* 2 ms between liveness checks */

/* This process's lock value, computed at the first lock (getpid is a system
 * call) and again in a forked child, which is another process with its own
 * pid and start time (sim_lock_after_fork, from the registry's atfork).
 * One word, read and written atomically: threads locking different tables
 * may compute it at the same time (the same value), and none may ever see
 * it half set (0 would "take" a free lock by swapping 0 for 0). Never 0
 * once set: the pid is not 0. */
static uint64_t my_value;
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

/* From /proc/PID/stat: the start-time tag (0 if unreadable), and whether
 * the process is dead but not yet reaped (a zombie: state Z or X with only
 * its group leader left; a leader that called pthread_exit is a zombie too,
 * but its live threads still count). */
static uint32_t proc_stat(pid_t pid, bool *dead)
{
	char path[64], buf[1024], *p, state = 0;
	unsigned long long start = 0;
	long threads = 0;
	ssize_t n;
	int fd;

	*dead = false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold anything, ')' included: fields start
	 * after the last ')'. state is field 3, num_threads 20, starttime 22. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c", &state) != 1)
		return 0;
	for (int field = 2; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
		if (p && field == 19 && sscanf(p + 1, "%ld", &threads) != 1)
			return 0;
	}
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	*dead = (state == 'Z' || state == 'X') && threads <= 1;
	/* Never 0 (that means "unknown"), but no other bit lost: with "| 1"
	 * a pid reused one tick after an even start time got its tag. */
	return (uint32_t)start ? (uint32_t)start : 1;
}

uint32_t sim_start_tag(pid_t pid)
{
	bool dead;

	return proc_stat(pid, &dead);
}

static uint64_t my_lock_value(void)
{
	uint64_t v = __atomic_load_n(&my_value, __ATOMIC_ACQUIRE);

	if (!v) {
		pid_t pid = getpid();

		v = (uint64_t)sim_start_tag(pid) << 32 | (uint32_t)pid;
		__atomic_store_n(&my_value, v, __ATOMIC_RELEASE);
	}
	return v;
}

void sim_lock_after_fork(void)
{
	__atomic_store_n(&my_value, 0, __ATOMIC_RELAXED);
}

/* May the holder recorded in v still hold the lock? False for anything
 * that is not a live process of that start time. */
static bool holder_alive(uint64_t v, uint64_t mine)
{
	uint32_t pid = (uint32_t)v, tag = (uint32_t)(v >> 32), now;
	bool dead;

	if (pid == 0 || pid > PID_LIMIT || pid == (uint32_t)mine)
		return false;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return false;
	/* A holder killed but not yet reaped still answers kill(): its
	 * /proc entry says it is a zombie (its parent may be the very process
	 * waiting here, which would never get to reap it). */
	now = proc_stat((pid_t)pid, &dead);
	if (dead)
		return false;
	/* An unreadable /proc entry proves nothing: assume alive. */
	return now == 0 || now == tag;
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

/* The futex is the low half (the pid) of the little-endian word. */
static uint32_t *futex_word(struct sim_table *t)
{
	return (uint32_t *)(void *)&t->s.lock;
}

/* deadline: CLOCK_MONOTONIC ns, or 0 for "the bound from now". */
static int lock_slow(struct sim_table *t, uint64_t mine, uint64_t deadline)
{
	uint64_t v;

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
		ownerless = v == 0 || !holder_alive(v, mine);
		/* A peer that rewrites the word between our look and our CAS
		 * makes every take-over fail: the deadline holds on this path
		 * too, or it could keep us here for as long as it goes on. */
		if (ownerless && try_take(&t->s.lock, v, mine))
			return RSHARE_OK;
		if (now_ns() >= deadline)
			return rs_fail(RSHARE_E_BUSY, ETIMEDOUT,
				       "simulated object table locked by another process "
				       "(pid %u) for %u ms", (unsigned)(uint32_t)v,
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

/* With m->local held. Published with a release store: sim_lookup reads
 * m->t without the mutex. */
static int map_table(struct sim_map *m, int fd)
{
	void *p = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return rs_fail(RSHARE_E_IO, errno, "cannot map the simulated object table");
	__atomic_store_n(&m->t, (struct sim_table *)p, __ATOMIC_RELEASE);
	return RSHARE_OK;
}

int sim_map_table(struct sim_map *m, int fd)
{
	int status = RSHARE_OK;

	pthread_mutex_lock(&m->local);
	if (!m->t)
		status = map_table(m, fd);
	pthread_mutex_unlock(&m->local);
	return status;
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

int sim_lock(struct sim_map *m, int fd)
{
	uint64_t mine, deadline = 0;
	int status = lock_local(m, &deadline);

	if (status)
		return status;
	if (!m->t && (status = map_table(m, fd)) != RSHARE_OK)
		goto fail;
	mine = my_lock_value();
	if (!try_take(&m->t->s.lock, 0, mine) &&
	    (status = lock_slow(m->t, mine, deadline)) != RSHARE_OK)
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
	uint64_t mine = __atomic_load_n(&my_value, __ATOMIC_RELAXED);

	if (__atomic_compare_exchange_n(&t->s.lock, &mine, 0, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED) &&
	    SH_LOAD(t->s.waiters) != 0)
		syscall(SYS_futex, futex_word(t), FUTEX_WAKE, 1, NULL, NULL, 0);
	pthread_mutex_unlock(&m->local);
}
