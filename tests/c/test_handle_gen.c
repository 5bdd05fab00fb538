/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Generations never come back. A slot's generation counts the objects that
 * died in it; at 2^32 - 1 the slot is retired instead of wrapping to a
 * generation an old handle still carries. Reaching the wrap for real takes
 * 2^32 object lives (minutes), so the test hook rs_test_slot_set_gen (only
 * in the rshare_core_test build of the core) moves a free slot's
 * generation next to it; everything else is the ordinary public API.
 */
#include <stdint.h>

#include "harness.h"
#include "internal.h"

#define TOK_INDEX(h) ((uint32_t)(uintptr_t)(h) & 0x0fffffffu)
#define TOK_GEN(h) ((uint32_t)((uintptr_t)(h) >> 32))

static rshare_device *dev;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
}

static void teardown(void)
{
	CHECK_OK(rshare_device_close(dev));
}

/* A PD allocated and freed: its handle, now stale. */
static rshare_pd *freed_pd(void)
{
	rshare_pd *first;
	uint32_t handle = 7;

	REQUIRE_OK(rshare_pd_alloc(dev, &first));
	CHECK_OK(rshare_pd_free(first));
	CHECK_ST(rshare_pd_handle(first, &handle), RSHARE_E_STALE);
	return first;
}

/* An ordinary reuse of the slot: same index, next generation. */
static void case_next_generation(void)
{
	rshare_pd *first = freed_pd(), *pd;

	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	CHECK(TOK_INDEX(pd) == TOK_INDEX(first));
	CHECK(TOK_GEN(pd) == TOK_GEN(first) + 1);
	CHECK_OK(rshare_pd_free(pd));
}

/* A slot out of generations is retired, not wrapped. */
static void case_retired(void)
{
	rshare_pd *first = freed_pd(), *pd, *last;
	uint32_t handle = 7;

	/* Bring the free slot to two generations before the top, as if it
	 * had been reused 2^32 - 3 times, and use it up. */
	REQUIRE(rs_test_slot_set_gen(first, RS_OBJ_PD, UINT32_MAX - 1) == RSHARE_OK);
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	CHECK(TOK_INDEX(pd) == TOK_INDEX(first) && TOK_GEN(pd) == UINT32_MAX - 1);
	CHECK_OK(rshare_pd_handle(pd, &handle));
	CHECK_OK(rshare_pd_free(pd));
	REQUIRE_OK(rshare_pd_alloc(dev, &last));
	CHECK(TOK_INDEX(last) == TOK_INDEX(first) && TOK_GEN(last) == UINT32_MAX);
	CHECK_OK(rshare_pd_free(last));

	/* The slot is out of generations: it is retired, not wrapped. The
	 * next objects live elsewhere and every old handle stays stale. */
	for (int i = 0; i < 200; i++) {
		REQUIRE_OK(rshare_pd_alloc(dev, &pd));
		CHECK(TOK_INDEX(pd) != TOK_INDEX(first));
		CHECK_ST(rshare_pd_handle(first, &handle), RSHARE_E_STALE);
		CHECK_ST(rshare_pd_handle(last, &handle), RSHARE_E_STALE);
		CHECK_OK(rshare_pd_free(pd));
	}
	handle = 7;
	CHECK_ST(rshare_pd_handle(first, &handle), RSHARE_E_STALE);
	CHECK(handle == 7); /* untouched on failure */
	CHECK_ST(rshare_pd_free(first), RSHARE_E_STALE);
	CHECK_ST(rshare_pd_unimport(last), RSHARE_E_STALE);
	CHECK_MSG("not live");
}

/* The hook refuses a live slot. */
static void case_hook_refuses_live(void)
{
	rshare_pd *pd;

	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	CHECK(rs_test_slot_set_gen(pd, RS_OBJ_PD, 5) == RSHARE_E_INVAL);
	CHECK_OK(rshare_pd_free(pd));
}

#define T_PROGRAM_test_handle_gen ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
