/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The simulated table against peers that misbehave with the layout in
 * mind: one killed (SIGKILL) while holding the table lock, ones killed in
 * the middle of an allocation or a free, one stopped while holding it, one
 * that scribbles over objects and the free-handle bitmaps, one that tries
 * to shrink or grow the file, one that damages the header. The survivors
 * keep working with clear statuses.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "sim_peer.h"

#define BOUND_MS 300

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Died in an allocation after taking VAR page 5 for handle 900, before
 * publishing it: the page must come back, the handle stay free. */
static void half_made_var(struct sim_table *t)
{
	t->s.intent = (struct sim_intent){ SIM_OP_ALLOC, 900, UINT32_MAX, 0 };
	t->s.var_owner[5] = 901;
	t->objs[900].page = 5;
	t->objs[900].type = 77; /* not yet a valid type */
}

static rshare_device *shared_dev;

/* A thread's pd_alloc against a stuck holder: its time in ms. */
static void *timed_alloc(void *arg)
{
	uint64_t t0 = ms_now();
	rshare_pd *pd;

	*(int *)arg = rshare_pd_alloc(shared_dev, &pd);
	*((int *)arg + 1) = (int)(ms_now() - t0);
	return NULL;
}

static uint32_t victim_handle; /* a live PD the next damage half-frees */

/* Died in a free after unpublishing the PD, before clearing its bit. */
static void half_freed_pd(struct sim_table *t)
{
	t->s.intent = (struct sim_intent){ SIM_OP_FREE, victim_handle, UINT32_MAX, 0 };
	t->objs[victim_handle].type = SIM_FREE;
}

/* What every case starts from (one fixture, made for each case). */
static unsigned char blob[RSHARE_BLOB_MAX], vblob[RSHARE_BLOB_MAX];
static rshare_device *dev, *imp;
static rshare_pd *pd, *pd2;
static rshare_var *vars[SIM_VAR_PAGES];
static struct sim_table *t;
static size_t len, vlen, map_len;
static uint32_t h;
static int fd, n;

static void setup(void)
{
	setenv("RSHARE_SIM_LOCK_MS", "300", 1); /* read once, at the first lock */
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);
	t = peer_map(fd, &map_len);
}

static void teardown(void)
{
	munmap(t, map_len);

	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* 1. Killed while holding the lock: the next caller takes it over
 * well within the bound. */
static void case_killed_holding_lock(void)
{
	{
		uint64_t t0;

		kill_peer(locked_peer(fd, NULL));
		t0 = ms_now();
		CHECK_OK(rshare_pd_alloc(dev, &pd2));
		CHECK(ms_now() - t0 < BOUND_MS);
		CHECK_OK(rshare_pd_free(pd2));
		CHECK_OK(rshare_pd_import(dev, blob, len, &pd2));
		CHECK_OK(rshare_pd_unimport(pd2));
		CHECK(t->s.lock == 0);
	}
}

/* 2a. Killed mid-allocation: the repair undoes it, so every VAR page
 * can be had again and handle 900 is free. */
static void case_killed_mid_alloc(void)
{
	kill_peer(locked_peer(fd, half_made_var));
	for (n = 0; n < (int)SIM_VAR_PAGES; n++)
		if (rshare_var_alloc(dev, 0, &vars[n]) != RSHARE_OK)
			break;
	CHECK(n == (int)SIM_VAR_PAGES);
	CHECK(t->objs[900].type == SIM_FREE);
	CHECK(t->s.intent.op == SIM_OP_NONE);
	while (n--)
		CHECK_OK(rshare_var_free(vars[n]));
	CHECK_OK(rshare_pd_import(dev, blob, len, &pd2)); /* the good PD survived */
	CHECK_OK(rshare_pd_unimport(pd2));
}

/* 2b. Killed mid-free: the PD is gone for everyone and its handle is
 * the lowest free one again. */
static void case_killed_mid_free(void)
{
	REQUIRE_OK(rshare_pd_alloc(dev, &pd2));
	REQUIRE_OK(rshare_pd_handle(pd2, &victim_handle));
	kill_peer(locked_peer(fd, half_freed_pd));
	CHECK_ST(rshare_pd_free(pd2), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_unimport(pd2));
	CHECK_OK(rshare_pd_alloc(dev, &pd2));
	CHECK_OK(rshare_pd_handle(pd2, &h));
	CHECK(h == victim_handle);
	CHECK_OK(rshare_pd_free(pd2));
}

/* 3. A live peer that sits on the lock: BUSY after the bound, not a
 * hang; fine again once it is gone. */
static void case_stopped_holder_busy(void)
{
	{
		pid_t pid = locked_peer(fd, NULL);
		uint64_t t0 = ms_now(), waited;

		kill(pid, SIGSTOP);
		CHECK_ST(rshare_pd_alloc(dev, &pd2), RSHARE_E_BUSY);
		waited = ms_now() - t0;
		CHECK(waited >= BOUND_MS && waited < BOUND_MS + 1000);
		CHECK_MSG("locked by another process");
		/* Two threads at once: each gets BUSY within the bound, not one
		 * bound after the other (the second waits on the process-local
		 * mutex with the same deadline). */
		{
			pthread_t th[2];
			int res[2][2];

			shared_dev = dev;
			for (int i = 0; i < 2; i++)
				REQUIRE(pthread_create(&th[i], NULL, timed_alloc, res[i]) == 0);
			for (int i = 0; i < 2; i++) {
				pthread_join(th[i], NULL);
				CHECK_ST(res[i][0], RSHARE_E_BUSY);
				CHECK(res[i][1] < 2 * BOUND_MS - 80);
			}
		}
		kill_peer(pid);
		CHECK_OK(rshare_pd_alloc(dev, &pd2));
		CHECK_OK(rshare_pd_free(pd2));
	}
}

/* 4. Scribbled objects: garbage is not found and never crashes us. */
static void case_scribbled_objects(void)
{
	for (int i = 100; i < 200; i++) {
		t->objs[i].type = (uint32_t)i * 2654435761u;
		t->objs[i].page = 0xffffffffu - (uint32_t)i;
	}
	t->objs[150].type = SIM_VAR; /* a VAR on a page that does not exist */
	{
		unsigned char forged[RSHARE_BLOB_MAX];
		rshare_pd *fp;

		REQUIRE_OK(rshare_pd_alloc(dev, &fp));
		len = export_pd(fp, forged);
		REQUIRE_OK(rshare_pd_handle(fp, &h));
		t->objs[h].type = 12345;
		CHECK_ST(rshare_pd_import(dev, forged, len, &pd2), RSHARE_E_NOT_FOUND);
		CHECK_ST(rshare_pd_free(fp), RSHARE_E_NOT_FOUND);
		CHECK_OK(rshare_pd_unimport(fp));
	}
}

/* 5. Bitmaps that lie. "All free" where objects live: the allocator
 * checks the slot, corrects the map and never overwrites a live
 * object of another kind. */
static void case_lying_bitmaps(void)
{
	{
		rshare_var *v;
		unsigned char b2[RSHARE_BLOB_MAX];
		size_t l2;
		rshare_pd *again;

		REQUIRE_OK(rshare_var_alloc(dev, 0, &v));
		vlen = export_var(v, vblob);
		memset(t->s.leaf, 0, sizeof(t->s.leaf));
		memset(t->s.mid, 0, sizeof(t->s.mid));
		t->s.top = 0;
		for (int i = 0; i < 10; i++) {
			CHECK_OK(rshare_pd_alloc(dev, &pd2));
			CHECK_OK(rshare_pd_handle(pd2, &h));
			l2 = export_pd(pd2, b2);
			CHECK(l2 > 0);
			CHECK(h != 0 && t->objs[h].type == SIM_PD);
			CHECK_OK(rshare_pd_free(pd2));
		}
		CHECK_OK(rshare_var_import(dev, vblob, vlen, &vars[0])); /* intact */
		CHECK_OK(rshare_var_unimport(vars[0]));
		CHECK_OK(rshare_pd_import(dev, blob, len = export_pd(pd, blob), &again));
		CHECK_OK(rshare_pd_unimport(again));
		/* "All full": a DoS a peer may cause, reported as such. */
		t->s.top = ~0ull;
		CHECK_ST(rshare_pd_alloc(dev, &pd2), RSHARE_E_NOMEM);
		t->s.top = 0;
		/* Lies both ways: words 0-3 claim full (hiding free handles: a
		 * leak), words 4-7 claim free over 256 garbage objects. Each call
		 * makes a bounded number of corrections, then says so; the map
		 * heals over the next calls. */
		for (int i = 256; i < 512; i++)
			t->objs[i].type = 99;
		for (int k = 0; k < 8; k++)
			t->s.leaf[k] = k < 4 ? ~0ull : 0;
		CHECK_ST(rshare_pd_alloc(dev, &pd2), RSHARE_E_NOMEM);
		CHECK_MSG("damaged");
		for (n = 0; n < 8 && rshare_pd_alloc(dev, &pd2) != RSHARE_OK; n++)
			;
		CHECK(n < 8);
		CHECK_OK(rshare_pd_handle(pd2, &h));
		CHECK(h >= 512);
		CHECK_OK(rshare_pd_free(pd2));
		for (int i = 256; i < 512; i++)
			t->objs[i].type = SIM_FREE;
		for (int k = 0; k < 8; k++)
			t->s.leaf[k] = 0;
		t->s.mid[0] = 0;
		t->s.top = 0;
		for (int i = 0; i < 256; i++)
			if (t->objs[i].type != SIM_FREE)
				t->s.leaf[i / 64] |= 1ull << (i % 64);
		CHECK_OK(rshare_var_free(v));
	}
}

/* 6. The file cannot be shrunk or grown under anyone's mappings. */
static void case_size_sealed(void)
{
	CHECK(ftruncate(fd, 4096) < 0 && errno == EPERM);
	CHECK(ftruncate(fd, 1 << 30) < 0 && errno == EPERM);
}

/* 7. A damaged header: a process that has not seen the table refuses
 * it; one that has keeps its validated view. */
static void case_damaged_header(void)
{
	{
		int ffd = foreign_table_fd();
		struct sim_table *ft = peer_map(ffd, &len);

		ft->h.var_area_off = 12;
		CHECK_ST(rshare_device_import(ffd, &imp), RSHARE_E_NODEV);
		ft->h.var_area_off = t->h.var_area_off;
		CHECK_OK(rshare_device_import(ffd, &imp));
		CHECK_OK(rshare_device_close(imp));
		munmap(ft, len);
		close(ffd);
	}
	t->h.var_area_off = 12;
	{
		void *a;
		rshare_var *v;

		CHECK_OK(rshare_device_import(fd, &imp)); /* already validated here */
		CHECK_OK(rshare_var_alloc(imp, 0, &v));
		CHECK_OK(rshare_var_map(v, &a));
		((volatile char *)a)[0] = 1;
		CHECK_OK(rshare_var_free(v));
		CHECK_OK(rshare_device_close(imp));
	}
}

#define T_PROGRAM_test_sim_robust ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
