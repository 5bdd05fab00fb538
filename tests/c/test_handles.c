/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Handles: NULL gives INVAL, anything not live gives STALE, for every
 * function that takes one, including after heavy reuse of the slots and
 * for handles of the wrong kind or made up.
 */
#include <stdint.h>

#include "harness.h"

/* Every handle-taking function on the given handles; expect one status. */
static void all_calls(rshare_device *dev, rshare_pd *pd, rshare_var *var, int want)
{
	unsigned char buf[RSHARE_BLOB_MAX];
	char name[RSHARE_NAME_MAX];
	size_t len;
	uint64_t u64;
	uint32_t u32;
	int i;
	void *addr;
	rshare_pd *opd;
	rshare_var *ovar;

	memset(buf, 0, sizeof(buf));
	if (dev || want == RSHARE_E_INVAL) {
		CHECK_ST(rshare_device_fd(dev, &i), want);
		CHECK_ST(rshare_device_name(dev, name, sizeof(name), &len), want);
		CHECK_ST(rshare_device_guid(dev, &u64), want);
		CHECK_ST(rshare_device_provider(dev, &i), want);
		CHECK_ST(rshare_pd_alloc(dev, &opd), want);
		CHECK_ST(rshare_var_alloc(dev, 0, &ovar), want);
		CHECK_ST(rshare_pd_import(dev, buf, 44, &opd), want);
		CHECK_ST(rshare_var_import(dev, buf, 60, &ovar), want);
		CHECK_ST(rshare_channel_send(0, dev, NULL, 0), want);
		CHECK_ST(rshare_device_close(dev), want);
	}
	if (pd || want == RSHARE_E_INVAL) {
		CHECK_ST(rshare_pd_export(pd, buf, sizeof(buf), &len), want);
		CHECK_ST(rshare_pd_handle(pd, &u32), want);
		CHECK_ST(rshare_pd_unimport(pd), want);
		CHECK_ST(rshare_pd_free(pd), want);
	}
	if (var || want == RSHARE_E_INVAL) {
		CHECK_ST(rshare_var_export(var, buf, sizeof(buf), &len), want);
		CHECK_ST(rshare_var_attrs(var, &u32, &u32, &u64), want);
		CHECK_ST(rshare_var_map(var, &addr), want);
		CHECK_ST(rshare_var_unmap(var), want);
		CHECK_ST(rshare_var_unimport(var), want);
		CHECK_ST(rshare_var_free(var), want);
	}
}

/* Every case but null: sim0. */
static rshare_device *dev;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
}

static void teardown(void)
{
	CHECK_OK(rshare_device_close(dev));
	CHECK_ST(rshare_device_close(dev), RSHARE_E_STALE);
}

/* A PD and a VAR, freed and unimported: their handles, now dead. */
static void dead_pair(rshare_pd **old_pd, rshare_var **old_var)
{
	REQUIRE_OK(rshare_pd_alloc(dev, old_pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, old_var));
	CHECK_OK(rshare_pd_free(*old_pd));
	CHECK_OK(rshare_var_unimport(*old_var));
}

/* NULL handles: INVAL for every call, saying NULL. */
static void case_null(void)
{
	all_calls(NULL, NULL, NULL, RSHARE_E_INVAL);
	CHECK(strstr(rshare_last_error(), "NULL") != NULL);
}

/* Freed and unimported handles are stale for every call. */
static void case_freed(void)
{
	rshare_pd *old_pd;
	rshare_var *old_var;

	dead_pair(&old_pd, &old_var);
	all_calls(NULL, old_pd, old_var, RSHARE_E_STALE);
	CHECK(strstr(rshare_last_error(), "not live") != NULL);
}

/* Heavy reuse: the slots of the old handles are recycled many times, the
 * old handles stay stale and never alias a new object. */
static void case_reuse(void)
{
	rshare_pd *old_pd, *pds[300];
	rshare_var *old_var;
	uint32_t h;

	dead_pair(&old_pd, &old_var);
	for (int round = 0; round < 200; round++) {
		/* Odd rounds free; even ones unimport on a throw-away table. */
		rshare_device *on = dev;
		if (round % 2 == 0)
			REQUIRE_OK(rshare_device_open("sim0", &on));
		for (int i = 0; i < 300; i++) {
			REQUIRE_OK(rshare_pd_alloc(on, &pds[i]));
			CHECK(pds[i] != old_pd);
		}
		for (int i = 0; i < 300; i++)
			CHECK_OK(round % 2 ? rshare_pd_free(pds[i]) : rshare_pd_unimport(pds[i]));
		if (on != dev)
			CHECK_OK(rshare_device_close(on));
	}
	all_calls(NULL, old_pd, old_var, RSHARE_E_STALE);
	for (int i = 0; i < 300; i++)
		CHECK_ST(rshare_pd_handle(pds[i], &h), RSHARE_E_STALE);
}

/* A handle of another kind, or a made-up value, is not live either. */
static void case_wrong_kind(void)
{
	rshare_pd *pd;
	rshare_var *var;
	uint32_t h;

	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	all_calls(NULL, (rshare_pd *)var, (rshare_var *)pd, RSHARE_E_STALE);
	all_calls((rshare_device *)pd, NULL, NULL, RSHARE_E_STALE);
	all_calls((rshare_device *)(uintptr_t)0x1, (rshare_pd *)(uintptr_t)0xdeadbeef,
		  (rshare_var *)(uintptr_t)UINTPTR_MAX, RSHARE_E_STALE);
	all_calls((rshare_device *)&h, (rshare_pd *)&h, (rshare_var *)&h, RSHARE_E_STALE);
	/* ...and the real ones were not disturbed by any of that. */
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK_OK(rshare_var_unimport(var));
	CHECK_OK(rshare_pd_free(pd));
}

/* A closed device is stale; a new device never reuses its handle value as
 * a live one for the old token (the set-up's device stays open). */
static void case_closed_device(void)
{
	rshare_device *dev2;

	REQUIRE_OK(rshare_device_open("sim0", &dev2));
	CHECK_OK(rshare_device_close(dev2));
	all_calls(dev2, NULL, NULL, RSHARE_E_STALE);
}

#define T_PROGRAM_test_handles ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
