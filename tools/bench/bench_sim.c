/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sim0's own costs (issue 9), measured through the provider table:
 *
 *  - "sim lock+unlock": the table lock (process-local mutex, then a CAS on
 *    the shared futex word, released by a CAS and a load) beside the robust
 *    process-shared glibc mutex the table used before (its floor here);
 *  - "sim churn, 100k live": a PD freed and allocated again at the top of
 *    the table with 100,000 live objects, beside the same with 10 live (the
 *    floor): flat per-operation cost is a ratio near 1;
 *  - "sim refill, 100k live": a PD in the middle freed and its handle, the
 *    lowest free one, allocated again, with 100,000 and with 10 live.
 *
 * On a device other than sim0 the rows report 0 and no floor.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "sim/sim_table.h"

#define LOCK_CALLS 40000
#define BIG 100000
#define SMALL 10
#define CHURN_CALLS 4000
#define ROUNDS 4

static bool not_sim(const struct bench_env *env, struct bench_result *r)
{
	if (env->ctx->ops == &rs_sim_provider)
		return false;
	*r = (struct bench_result){ .floor_med = -1, .floor_p99 = -1 };
	return true;
}

int bench_sim_lock(const struct bench_env *env, const void *arg, struct bench_result *r)
{
	struct sim_map *m = env->ctx->prov;
	int calls = LOCK_CALLS / env->scale, fd, s = 0;
	struct series a, f;
	pthread_mutexattr_t attr;
	pthread_mutex_t *mx;

	(void)arg;
	if (not_sim(env, r))
		return 0;
	fd = memfd_create("bench-robust-mutex", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return bench_fail("robust mutex set-up", RSHARE_E_IO, true);
	mx = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (mx == MAP_FAILED)
		return bench_fail("robust mutex set-up", RSHARE_E_IO, true);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(mx, &attr);
	pthread_mutexattr_destroy(&attr);
	a = series_new((size_t)calls / BENCH_GROUP + 1);
	f = series_new((size_t)calls / BENCH_GROUP + 1);
	for (int i = 0; i < calls && !s; i += BENCH_GROUP) {
		uint64_t t0 = bench_now_ns();

		for (int k = 0; k < BENCH_GROUP && !s; k++) {
			s = sim_lock(m, env->ctx->fd);
			if (!s)
				sim_unlock(m);
		}
		series_add(&a, t0, bench_now_ns(), BENCH_GROUP);
		t0 = bench_now_ns();
		for (int k = 0; k < BENCH_GROUP; k++) {
			pthread_mutex_lock(mx);
			pthread_mutex_unlock(mx);
		}
		series_add(&f, t0, bench_now_ns(), BENCH_GROUP);
	}
	if (!s) {
		r->med = series_pct(&a, 0.5), r->p99 = series_pct(&a, 0.99);
		r->floor_med = series_pct(&f, 0.5), r->floor_p99 = series_pct(&f, 0.99);
	}
	series_free(&a);
	series_free(&f);
	munmap(mx, 4096);
	return s ? bench_fail("sim lock", s, true) : 0;
}

static struct rs_pd_info pds[BIG];

/* Grow or shrink the live PDs to n. */
static int set_live(struct rs_ctx *ctx, int *live, int n)
{
	int s = 0;

	while (*live < n && !s)
		if (!(s = ctx->ops->pd_alloc(ctx, &pds[*live])))
			(*live)++;
	while (*live > n && !s)
		s = ctx->ops->pd_dealloc(ctx, &pds[--*live]);
	return s;
}

/* Time calls free+alloc pairs: at the top (middle false) or of a live PD
 * in the middle, whose handle is then the lowest free one. */
static int churn(struct rs_ctx *ctx, int live, bool middle, int calls, struct series *out)
{
	struct rs_pd_info extra;
	int s = 0;

	for (int i = 0; i < calls && !s; i += BENCH_GROUP) {
		uint64_t t0 = bench_now_ns();

		for (int k = 0; k < BENCH_GROUP && !s; k++) {
			struct rs_pd_info *pd = middle ? &pds[(unsigned)(i + k) * 7919u % (unsigned)live] :
							 &extra;

			if (middle)
				s = ctx->ops->pd_dealloc(ctx, pd);
			if (!s)
				s = ctx->ops->pd_alloc(ctx, pd);
			if (!s && !middle)
				s = ctx->ops->pd_dealloc(ctx, pd);
		}
		series_add(out, t0, bench_now_ns(), BENCH_GROUP);
	}
	return s;
}

int bench_sim_live(const struct bench_env *env, const void *arg, struct bench_result *r)
{
	bool middle = *(const bool *)arg;
	int calls = CHURN_CALLS / env->scale + BENCH_GROUP, live = 0, s = 0;
	struct series a = series_new((size_t)(ROUNDS * calls / BENCH_GROUP + 1));
	struct series f = series_new((size_t)(ROUNDS * calls / BENCH_GROUP + 1));

	if (not_sim(env, r))
		return 0;
	/* Alternate, so both see the same machine state. */
	for (int round = 0; round < ROUNDS && !s; round++) {
		s = set_live(env->ctx, &live, SMALL);
		if (!s)
			s = churn(env->ctx, live, middle, calls, &f);
		if (!s)
			s = set_live(env->ctx, &live, BIG);
		if (!s)
			s = churn(env->ctx, live, middle, calls, &a);
	}
	if (!s)
		s = set_live(env->ctx, &live, 0);
	if (!s) {
		r->med = series_pct(&a, 0.5), r->p99 = series_pct(&a, 0.99);
		r->floor_med = series_pct(&f, 0.5), r->floor_p99 = series_pct(&f, 0.99);
	}
	series_free(&a);
	series_free(&f);
	return s ? bench_fail("sim churn", s, true) : 0;
}
