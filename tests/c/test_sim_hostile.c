/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The hostile peer, knowing nothing of the layout: it maps the whole memfd
 * and writes random and structured values (0, -1, small integers, its own
 * and the victim's pids and tids, pointers, random words) at random offsets,
 * as 1, 2, 4 and 8-byte stores, without pause, biased towards the start of
 * the file where any table keeps its bookkeeping. Racing it, the victim
 * (two threads) allocates, exports, imports, maps, writes, unmaps,
 * unimports and frees PDs, VARs, MRs and device memory in a loop. The victim must only ever see
 * documented statuses, never wait past the lock bound, never crash (the
 * sanitized build runs this too), and close the device cleanly at the end.
 *
 * Runs 3 s by default; for minutes by hand:
 *   RSHARE_HOSTILE_SECONDS=300 build/bin/test_sim_hostile
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>

#include "sim_peer.h"

#define BOUND_MS 200
#define SLACK_MS 800 /* a sanitized build on a loaded 2-core machine */

static rshare_device *dev;
static uint64_t stop_at;
static int bad_status, too_slow, first_bad;
static unsigned long calls, refused; /* all calls; those the peer made fail */
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void peer(int fd, pid_t victim)
{
	size_t len;
	uint8_t *p = (uint8_t *)peer_map(fd, &len);
	uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1, local = 0;
	const uint64_t vals[] = { 0, ~0ull, 1, 2, 3, 63, 64, 65, 255, 4096,
				  (uint32_t)victim, (uint32_t)victim + 1, (uint32_t)getpid(),
				  (uint64_t)syscall(SYS_gettid), 0x80000000ull,
				  (uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)&local,
				  0x7fffffffull, 4194304 };
	const size_t nvals = sizeof(vals) / sizeof(vals[0]);

	for (;;) {
		uint64_t v, off;
		unsigned width;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		switch (x & 3) { /* where: mostly near the start */
		case 0: case 1: off = (x >> 8) % 65536; break;
		case 2: off = (x >> 8) % (2u << 20); break;
		default: off = (x >> 8) % len; break;
		}
		width = 1u << ((x >> 40) & 3);
		off &= ~(uint64_t)(width - 1);
		if (off + width > len)
			continue;
		v = (x >> 44) & 1 ? vals[(x >> 45) % nvals] : x * 0x2545f4914f6cdd1dull;
		switch (width) {
		case 1: __atomic_store_n(p + off, (uint8_t)v, __ATOMIC_RELAXED); break;
		case 2: __atomic_store_n((uint16_t *)(p + off), (uint16_t)v, __ATOMIC_RELAXED); break;
		case 4: __atomic_store_n((uint32_t *)(p + off), (uint32_t)v, __ATOMIC_RELAXED); break;
		default: __atomic_store_n((uint64_t *)(p + off), v, __ATOMIC_RELAXED); break;
		}
	}
}

/* Check one call's status against the documented ones for it. */
static int judge(const char *what, int s, uint64_t t0, const int *allowed, size_t n)
{
	bool ok = false;

	for (size_t i = 0; i < n; i++)
		ok |= s == allowed[i];
	pthread_mutex_lock(&count_lock);
	calls++;
	refused += s != RSHARE_OK;
	pthread_mutex_unlock(&count_lock);
	if (!ok || ms_now() - t0 > BOUND_MS + SLACK_MS) {
		pthread_mutex_lock(&count_lock);
		if (!ok)
			bad_status++;
		else
			too_slow++;
		if (!first_bad++)
			fprintf(stderr, "%s: %s after %llu ms (%s)\n", what, rshare_status_name(s),
				(unsigned long long)(ms_now() - t0), rshare_last_error());
		pthread_mutex_unlock(&count_lock);
	}
	return s;
}

#define CALL(what, expr, ...)                                                   \
	({                                                                      \
		static const int allowed_[] = { RSHARE_OK, __VA_ARGS__ };       \
		uint64_t t0_ = ms_now();                                        \
		judge(what, (expr), t0_, allowed_,                              \
		      sizeof(allowed_) / sizeof(allowed_[0]));                  \
	})

static void pd_round(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_pd *pd, *imp;
	size_t len;

	if (CALL("pd_alloc", rshare_pd_alloc(dev, &pd), RSHARE_E_BUSY, RSHARE_E_NOMEM))
		return;
	CALL("pd_export", rshare_pd_export(pd, blob, sizeof(blob), &len));
	if (!CALL("pd_import", rshare_pd_import(dev, blob, len, &imp), RSHARE_E_BUSY,
		  RSHARE_E_NOT_FOUND))
		CALL("pd_unimport", rshare_pd_unimport(imp));
	if (CALL("pd_free", rshare_pd_free(pd), RSHARE_E_BUSY, RSHARE_E_NOT_FOUND))
		CALL("pd_unimport", rshare_pd_unimport(pd));
}

static void var_round(unsigned n)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_var *var, *imp;
	void *addr;
	size_t len;

	if (CALL("var_alloc", rshare_var_alloc(dev, 0, &var), RSHARE_E_BUSY, RSHARE_E_NOMEM,
		 RSHARE_E_IO))
		return;
	CALL("var_export", rshare_var_export(var, blob, sizeof(blob), &len));
	if (!CALL("var_import", rshare_var_import(dev, blob, len, &imp), RSHARE_E_BUSY,
		  RSHARE_E_NOT_FOUND, RSHARE_E_BLOB_CORRUPT)) {
		if (!CALL("var_map", rshare_var_map(imp, &addr), RSHARE_E_BUSY, RSHARE_E_IO,
			  RSHARE_E_NOT_FOUND)) {
			((volatile uint32_t *)addr)[n % 1024] = n;
			CALL("var_unmap", rshare_var_unmap(imp));
		}
		CALL("var_unimport", rshare_var_unimport(imp));
	}
	if (!CALL("var_map", rshare_var_map(var, &addr), RSHARE_E_BUSY, RSHARE_E_IO,
		  RSHARE_E_NOT_FOUND))
		((volatile uint32_t *)addr)[(n + 1) % 1024] = n;
	if (CALL("var_free", rshare_var_free(var), RSHARE_E_BUSY, RSHARE_E_NOT_FOUND))
		CALL("var_unimport", rshare_var_unimport(var));
}

static void mr_round(void)
{
	static char mem[256];
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_pd *pd;
	rshare_mr *mr, *imp;
	size_t len;

	if (CALL("pd_alloc", rshare_pd_alloc(dev, &pd), RSHARE_E_BUSY, RSHARE_E_NOMEM))
		return;
	if (!CALL("mr_reg", rshare_mr_reg(pd, mem, sizeof(mem), RSHARE_ACCESS_LOCAL_WRITE, &mr),
		  RSHARE_E_BUSY, RSHARE_E_NOMEM, RSHARE_E_NOT_FOUND)) {
		CALL("mr_export", rshare_mr_export(mr, blob, sizeof(blob), &len));
		if (!CALL("mr_import", rshare_mr_import(pd, blob, len, &imp), RSHARE_E_BUSY,
			  RSHARE_E_NOT_FOUND, RSHARE_E_BLOB_CORRUPT, RSHARE_E_DEVICE_MISMATCH))
			CALL("mr_unimport", rshare_mr_unimport(imp));
		if (CALL("mr_dereg", rshare_mr_dereg(mr), RSHARE_E_BUSY, RSHARE_E_NOT_FOUND))
			CALL("mr_unimport", rshare_mr_unimport(mr));
	}
	/* BUSY also when a peer bent the PD's MR count. */
	if (CALL("pd_free", rshare_pd_free(pd), RSHARE_E_BUSY, RSHARE_E_NOT_FOUND))
		CALL("pd_unimport", rshare_pd_unimport(pd));
}

static void dm_round(unsigned n)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_dm *dm, *imp;
	char buf[16];
	size_t len;

	if (CALL("dm_alloc", rshare_dm_alloc(dev, 100 + n % 9000, &dm), RSHARE_E_BUSY,
		 RSHARE_E_NOMEM, RSHARE_E_IO))
		return;
	CALL("dm_write", rshare_dm_write(dm, 10, "hostile", 7), RSHARE_E_BUSY,
	     RSHARE_E_NOT_FOUND, RSHARE_E_INVAL);
	CALL("dm_export", rshare_dm_export(dm, blob, sizeof(blob), &len));
	if (!CALL("dm_import", rshare_dm_import(dev, blob, len, &imp), RSHARE_E_BUSY,
		  RSHARE_E_NOT_FOUND, RSHARE_E_BLOB_CORRUPT)) {
		CALL("dm_read", rshare_dm_read(imp, 10, buf, 7), RSHARE_E_BUSY,
		     RSHARE_E_NOT_FOUND, RSHARE_E_INVAL);
		CALL("dm_unimport", rshare_dm_unimport(imp));
	}
	if (CALL("dm_free", rshare_dm_free(dm), RSHARE_E_BUSY, RSHARE_E_NOT_FOUND))
		CALL("dm_unimport", rshare_dm_unimport(dm));
}

static void *victim(void *arg)
{
	(void)arg;
	for (unsigned n = 0; ms_now() < stop_at; n++) {
		pd_round();
		var_round(n);
		mr_round();
		dm_round(n);
	}
	return NULL;
}

static void case_hostile_peer(void)
{
	const char *secs = getenv("RSHARE_HOSTILE_SECONDS");
	pthread_t th[2];
	pid_t pid;
	int fd;

	setenv("RSHARE_SIM_LOCK_MS", "200", 1);
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		peer(fd, getppid());
	stop_at = ms_now() + 1000 * (uint64_t)(secs ? atoi(secs) : 3);
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&th[i], NULL, victim, NULL) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	kill_peer(pid);
	printf("%lu calls, %lu refused with a documented status\n", calls, refused);
	CHECK(calls > 1000);
	CHECK(bad_status == 0);
	CHECK(too_slow == 0);
	CHECK_OK(rshare_device_close(dev)); /* every handle was released */
}

#define T_PROGRAM_test_sim_hostile ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(NULL, NULL)
