/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Samples, percentiles and the clock. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "util/error.h"

static uint64_t clock_cost;

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct series series_new(size_t cap)
{
	struct series s = { calloc(cap ? cap : 1, sizeof(uint64_t)), 0, cap };

	if (!s.v) {
		fputs("rshare-bench: out of memory\n", stderr);
		exit(1);
	}
	return s;
}

void series_free(struct series *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void series_add(struct series *s, uint64_t t0, uint64_t t1, unsigned calls)
{
	uint64_t d = t1 - t0;

	if (s->n < s->cap)
		s->v[s->n++] = (d > clock_cost ? d - clock_cost : 0) / calls;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

double series_pct(struct series *s, double p)
{
	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof(uint64_t), cmp_u64);
	return (double)s->v[(size_t)(p * (double)(s->n - 1))];
}

void bench_calibrate(void)
{
	enum { N = 100000 };
	struct series s = series_new(N);

	for (int i = 0; i < N; i++) {
		uint64_t t0 = bench_now_ns();
		series_add(&s, t0, bench_now_ns(), 1);
	}
	clock_cost = (uint64_t)series_pct(&s, 0.5);
	series_free(&s);
}

uint64_t bench_clock_cost(void)
{
	return clock_cost;
}

int bench_fail(const char *what, int status, bool direct)
{
	const char *msg = direct ? rs_last_error() : rshare_last_error();

	fprintf(stderr, "rshare-bench: %s: %s: %s\n", what, rshare_status_name(status),
		*msg ? msg : rshare_strerror(status));
	return -1;
}
