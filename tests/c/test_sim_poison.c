/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Layout-aware attacks, one per finding of issue 9, each against a victim
 * that must only ever get a documented status, within the lock bound:
 *  1. the lock word poisoned with every kind of value (no pid, a huge or
 *     negative pid, our own pid, our own exact value from a "previous
 *     life", a live pid of another start time, a live holder that never
 *     lets go), and the whole lock area (word, waiter count, intent)
 *     hammered while the victim works (with glibc's robust mutex these
 *     made the victim abort or write where the peer chose);
 *  2. double fetches: a peer flips a VAR's page number and its page owner
 *     between valid and wild values while the victim imports, maps and
 *     frees it (the old code indexed past its arrays; ASan would see it);
 *  3. a poisoned table sent over rshare_channel_send, then used.
 */
#include <errno.h>
#include <time.h>

#include "sim_peer.h"

#define BOUND_MS 200

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A PD alloc+free under whatever the lock word holds: OK, or BUSY after
 * about the bound; never longer. */
static void alloc_free(rshare_device *dev, int want)
{
	uint64_t t0 = ms_now();
	rshare_pd *pd;
	int s = rshare_pd_alloc(dev, &pd);

	CHECK_ST(s, want);
	CHECK(ms_now() - t0 < BOUND_MS + 500);
	if (s == RSHARE_OK)
		CHECK_OK(rshare_pd_free(pd));
}

/* A child that lives until killed, holding the liveness byte of the
 * holder value it writes to *value (shared memory). */
static pid_t sleeper(int fd, uint64_t *value)
{
	pid_t pid;

	*value = 0;
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		__atomic_store_n(value, peer_lock_value(fd), __ATOMIC_RELEASE);
		for (;;)
			pause();
	}
	while (!__atomic_load_n(value, __ATOMIC_ACQUIRE))
		usleep(1000);
	return pid;
}

/* The library's own holder value for the table in fd (after a lock, with
 * no other process on the table): its liveness byte's offset, as
 * /proc/locks lists it. */
static uint64_t own_value(int fd)
{
	unsigned long long start, ino;
	char line[256];
	struct stat st;
	uint64_t v = 0;
	FILE *f = fopen("/proc/locks", "r");

	REQUIRE(f != NULL && fstat(fd, &st) == 0);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: OFDLCK %*s READ %*d %*x:%*x:%llu %llu", &ino, &start) == 2 &&
		    ino == (unsigned long long)st.st_ino && start >= SIM_LIVE_BASE)
			v = start - SIM_LIVE_BASE;
	fclose(f);
	return v;
}

static rshare_device *fx_dev; /* sim0 and its table, mapped as a peer would */
static struct sim_table *fx_t;
static size_t fx_map_len;
static int fx_fd;

static void case_poisoned_words(void)
{
	rshare_device *dev = fx_dev;
	struct sim_table *t = fx_t;
	int fd = fx_fd;

	uint64_t *live_value = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				    -1, 0);
	uint64_t mine, live_v;
	pid_t live;

	alloc_free(dev, RSHARE_OK); /* the library has its value now */
	mine = own_value(fd);
	REQUIRE(live_value != MAP_FAILED && mine != 0);
	live = sleeper(fd, live_value);
	live_v = *live_value;
	const uint64_t taken_over[] = {
		~0ull,                                   /* -1 */
		0xdeadbeef00000000ull,                   /* 0 in the futex half */
		0x12345678ull << 32 | 4194305u,          /* a pid-like value */
		0x80000001ull,                           /* a negative pid */
		(uint64_t)(uint32_t)getpid(),            /* our pid */
		mine,                                    /* our own exact value */
		live_v ^ (1ull << 40),                   /* near a live value */
		(uint64_t)(uint32_t)live,                /* a live process's pid */
		(uint64_t)(uintptr_t)&mine,              /* a pointer */
	};

	for (size_t i = 0; i < sizeof(taken_over) / sizeof(taken_over[0]); i++) {
		t->s.lock = taken_over[i];
		t->s.waiters = (uint32_t)i * 0x10001u;
		alloc_free(dev, RSHARE_OK);
	}
	/* A live process (its liveness byte held) really holds it: BUSY. */
	t->s.lock = live_v;
	alloc_free(dev, RSHARE_E_BUSY);
	kill_peer(live);
	alloc_free(dev, RSHARE_OK); /* ... until it dies */
	t->s.waiters = 0;
	munmap(live_value, 8);
}

/* Hammer the lock area with values while the victim works. */
static pid_t hammer_lock(int fd, pid_t victim)
{
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct sim_table *t = peer_map(fd, NULL);
		uint64_t vals[] = { 0, ~0ull, 1, (uint32_t)victim, (uint32_t)getpid(),
				    (uint64_t)(uintptr_t)t, 0x80000000ull, 2, 42 };
		uint64_t x = 88172645463325252ull;

		for (;;) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			switch (x % 4) {
			case 0: t->s.lock = vals[(x >> 8) % 9]; break;
			case 1: t->s.waiters = (uint32_t)vals[(x >> 8) % 9]; break;
			case 2: t->s.intent.op = (uint32_t)(x >> 16) % 4;
				t->s.intent.handle = (uint32_t)(x >> 24);
				break;
			case 3: t->s.intent.pd_handle = (uint32_t)(x >> 32);
				t->s.intent.pd_mrs = (uint32_t)vals[(x >> 8) % 9];
				break;
			}
		}
	}
	return pid;
}

static bool documented(int s)
{
	return s == RSHARE_OK || s == RSHARE_E_BUSY || s == RSHARE_E_NOT_FOUND ||
	       s == RSHARE_E_NOMEM || s == RSHARE_E_BLOB_CORRUPT || s == RSHARE_E_IO;
}

/* PD and VAR round trips; every status documented, every call bounded. */
static void work(rshare_device *dev, int rounds, int *bad)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len;

	for (int i = 0; i < rounds; i++) {
		rshare_var *v, *imp;
		uint64_t t0 = ms_now();
		void *addr;
		int s = rshare_var_alloc(dev, 0, &v);

		*bad += !documented(s);
		if (s)
			continue;
		if (rshare_var_export(v, blob, sizeof(blob), &len) == RSHARE_OK) {
			s = rshare_var_import(dev, blob, len, &imp);
			*bad += !documented(s);
			if (!s) {
				s = rshare_var_map(imp, &addr);
				*bad += !documented(s);
				if (!s)
					((volatile char *)addr)[i % 4096] = 1;
				*bad += rshare_var_unimport(imp) != RSHARE_OK;
			}
		}
		s = rshare_var_free(v);
		*bad += !documented(s);
		if (s)
			*bad += rshare_var_unimport(v) != RSHARE_OK;
		*bad += ms_now() - t0 > 4 * (BOUND_MS + 500);
	}
}

/* Flip the page field and the page owners of the first VARs between valid
 * and wild values. */
static pid_t flipper(int fd)
{
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct sim_table *t = peer_map(fd, NULL);
		const uint32_t wild[] = { 0, 1, 63, 64, 0x7fffffffu, 0xffffffffu };

		for (uint32_t n = 0;; n++) {
			uint32_t h = n % 8, w = wild[(n / 8) % 6];

			__atomic_store_n(&t->objs[h].page, w, __ATOMIC_RELAXED);
			__atomic_store_n(&t->s.var_owner[n % 64], (n & 1) ? h + 1 : w,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&t->objs[h].dm_first, w, __ATOMIC_RELAXED);
			__atomic_store_n(&t->objs[h].pd_handle, w, __ATOMIC_RELAXED);
		}
	}
	return pid;
}

/* A process poisons its own table and sends it; the victim uses it. */
static void case_poisoned_over_channel(void)
{
	int sv[2], bad = 0;
	pid_t pid;

	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_device *dev;
		struct sim_table *t;
		int fd;

		close(sv[0]);
		if (rshare_device_open("sim0", &dev) || rshare_device_fd(dev, &fd))
			_exit(1);
		t = peer_map(fd, NULL);
		/* glibc's "PI + robust, owner TID that does not exist" trick,
		 * in our word: a pid that is not there, waiters, an intent
		 * naming a wild handle, bitmaps that lie. */
		t->s.lock = 0x00000001ull << 32 | 4194000u;
		t->s.waiters = 7;
		t->s.intent = (struct sim_intent){ SIM_OP_ALLOC, 0xfffffff0u, 5, 9 };
		memset(t->s.leaf, 0xff, 64);
		t->objs[0].type = SIM_VAR;
		t->objs[0].page = 0x7fffffff;
		_exit(rshare_channel_send(sv[1], dev, "x", 1) ? 1 : 0);
	}
	close(sv[1]);
	{
		rshare_device *dev;
		char buf[16];
		size_t len;
		rshare_pd *pd;
		uint64_t t0;

		REQUIRE_OK(rshare_channel_recv(sv[0], &dev, buf, sizeof(buf), &len));
		waitpid(pid, NULL, 0);
		t0 = ms_now();
		CHECK_OK(rshare_pd_alloc(dev, &pd));
		CHECK(ms_now() - t0 < BOUND_MS + 500);
		CHECK_OK(rshare_pd_free(pd));
		work(dev, 50, &bad);
		CHECK(bad == 0);
		CHECK_OK(rshare_device_close(dev));
	}
	close(sv[0]);
}

static void setup(void)
{
	setenv("RSHARE_SIM_LOCK_MS", "200", 1);
	REQUIRE_OK(rshare_device_open("sim0", &fx_dev));
	REQUIRE_OK(rshare_device_fd(fx_dev, &fx_fd));
	fx_t = peer_map(fx_fd, &fx_map_len);
}

static void teardown(void)
{
	munmap(fx_t, fx_map_len);
	CHECK_OK(rshare_device_close(fx_dev));
}

/* Work goes on while a peer hammers the lock... */
static void case_lock_hammered(void)
{
	int bad = 0;
	pid_t peer = hammer_lock(fx_fd, getpid());

	work(fx_dev, 3000, &bad);
	kill_peer(peer);
	CHECK(bad == 0);
}

/* ... and while one flips bits of the table. */
static void case_bits_flipped(void)
{
	int bad = 0;
	pid_t peer = flipper(fx_fd);

	work(fx_dev, 3000, &bad);
	kill_peer(peer);
	CHECK(bad == 0);
}

#define T_PROGRAM_test_sim_poison ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
