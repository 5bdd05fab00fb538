/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Many threads at once: importing and unimporting one blob, racing to
 * release the same handle, mapping the same VAR, and closing a device that
 * other threads are using. Nothing may crash, leak or double-release.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"

#define NTHREADS 8
#define ITERS 3000

static rshare_device *dev;
static unsigned char pd_blob[RSHARE_BLOB_MAX];
static size_t pd_len;
static uint32_t pd_handle;
static atomic_int failures, oks, stales;
static rshare_pd *shared_pd;
static rshare_var *shared_var;
static void *addrs[NTHREADS];
static pthread_barrier_t barrier;

static void *importer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
		rshare_pd *pd;
		uint32_t h;
		unsigned char buf[RSHARE_BLOB_MAX];
		size_t len;

		if (rshare_pd_import(dev, pd_blob, pd_len, &pd) ||
		    rshare_pd_handle(pd, &h) || h != pd_handle ||
		    rshare_pd_export(pd, buf, sizeof(buf), &len) || len != pd_len ||
		    rshare_pd_unimport(pd))
			atomic_fetch_add(&failures, 1);
	}
	return NULL;
}

static void *racer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&barrier);
	int st = rshare_pd_unimport(shared_pd);
	if (st == RSHARE_OK)
		atomic_fetch_add(&oks, 1);
	else if (st == RSHARE_E_STALE)
		atomic_fetch_add(&stales, 1);
	else
		atomic_fetch_add(&failures, 1);
	return NULL;
}

static void *mapper(void *arg)
{
	pthread_barrier_wait(&barrier);
	if (rshare_var_map(shared_var, &addrs[(intptr_t)arg]))
		atomic_fetch_add(&failures, 1);
	return NULL;
}

static atomic_int stop;

static void *churner(void *arg)
{
	rshare_device *d = arg;
	while (!atomic_load(&stop)) {
		rshare_pd *pd;
		int st = rshare_pd_alloc(d, &pd);
		if (st == RSHARE_E_STALE)
			break; /* the device was closed under us: fine */
		if (st || rshare_pd_free(pd))
			atomic_fetch_add(&failures, 1);
	}
	return NULL;
}

/* What every case starts from (one fixture, made for each case). */
static pthread_t th[NTHREADS];
static rshare_pd *pd;
static rshare_device *d2;

static void setup(void)
{
	pthread_barrier_init(&barrier, NULL, NTHREADS); /* racers and mappers start at once */
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	pd_len = export_pd(pd, pd_blob);
	REQUIRE_OK(rshare_pd_handle(pd, &pd_handle));
}

static void teardown(void)
{
	pthread_barrier_destroy(&barrier);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* Import/unimport storm. */
static void case_import_storm(void)
{
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, importer, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&failures) == 0);
}

/* Racing releases of one handle: exactly one wins. */
static void case_racing_releases(void)
{
	for (int round = 0; round < 100; round++) {
		atomic_store(&oks, 0);
		atomic_store(&stales, 0);
		REQUIRE_OK(rshare_pd_import(dev, pd_blob, pd_len, &shared_pd));
		for (int i = 0; i < NTHREADS; i++)
			pthread_create(&th[i], NULL, racer, NULL);
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		CHECK(atomic_load(&oks) == 1);
		CHECK(atomic_load(&stales) == NTHREADS - 1);
	}
	CHECK(atomic_load(&failures) == 0);
}

/* Mapping one VAR from many threads: one mapping, one address. */
static void case_map_from_many_threads(void)
{
	REQUIRE_OK(rshare_var_alloc(dev, 0, &shared_var));
	for (intptr_t i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, mapper, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 1; i < NTHREADS; i++)
		CHECK(addrs[i] == addrs[0] && addrs[0] != NULL);
	CHECK_OK(rshare_var_free(shared_var));
}

/* Closing a device while threads allocate on it: BUSY or OK, and
 * once closed every thread sees STALE and stops. */
static void case_close_while_allocating(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &d2));
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, churner, d2);
	for (int tries = 0;; tries++) {
		int st = rshare_device_close(d2);
		if (st == RSHARE_OK)
			break;
		CHECK_ST(st, RSHARE_E_BUSY);
		if (tries > 2000000) {
			atomic_store(&stop, 1);
			tries = 0;
		}
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&failures) == 0);
}

#define T_PROGRAM_test_threads ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
