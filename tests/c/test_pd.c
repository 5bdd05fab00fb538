/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* PD life cycle: alloc, export, import, unimport, free, and their failures. */
#include "harness.h"

/* More than any table holds (sim0: 262,144 objects). */
#define MANY 300000

/* Every case: sim0 twice (the second a separately opened table), a PD, its
 * blob and kernel handle. */
static struct {
	rshare_device *dev, *other;
	rshare_pd *pd; /* NULL once a case has freed it */
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len;
	uint32_t h;
} fx;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &fx.dev));
	REQUIRE_OK(rshare_device_open("sim0", &fx.other));
	REQUIRE_OK(rshare_pd_alloc(fx.dev, &fx.pd));
	REQUIRE_OK(rshare_pd_handle(fx.pd, &fx.h));
	fx.len = export_pd(fx.pd, fx.blob);
}

static void teardown(void)
{
	if (fx.pd)
		CHECK_OK(rshare_pd_free(fx.pd));
	CHECK_OK(rshare_device_close(fx.other));
	CHECK_OK(rshare_device_close(fx.dev));
}

static void case_alloc_handle(void)
{
	uint32_t h;

	CHECK_ST(rshare_pd_alloc(fx.dev, NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_pd_handle(fx.pd, &h));
	CHECK(h == fx.h);
	CHECK_ST(rshare_pd_handle(fx.pd, NULL), RSHARE_E_INVAL);
}

/* Export with the (buf, cap, len) convention. */
static void case_export_nospace(void)
{
	unsigned char blob[RSHARE_BLOB_MAX], small[8];
	size_t len, n;
	int kind;

	CHECK_ST(rshare_pd_export(fx.pd, NULL, 0, &len), RSHARE_E_NOSPACE);
	CHECK(len > 0 && len <= RSHARE_BLOB_MAX && len < 100);
	n = len;
	len = 0;
	CHECK_ST(rshare_pd_export(fx.pd, small, sizeof(small), &len), RSHARE_E_NOSPACE);
	CHECK(len == n);
	CHECK_ST(rshare_pd_export(fx.pd, blob, sizeof(blob), NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_pd_export(fx.pd, blob, n, &len));
	CHECK(len == n);
	CHECK_OK(rshare_blob_kind(blob, len, &kind));
	CHECK(kind == RSHARE_KIND_PD);
}

/* Import gives the same kernel handle; imports are independent. */
static void case_import_same_handle(void)
{
	rshare_pd *imp, *imp2;
	uint32_t h2;

	CHECK_OK(rshare_pd_import(fx.dev, fx.blob, fx.len, &imp));
	CHECK_OK(rshare_pd_handle(imp, &h2));
	CHECK(h2 == fx.h);
	CHECK(imp != fx.pd);
	CHECK_OK(rshare_pd_import(fx.dev, fx.blob, fx.len, &imp2));
	CHECK_OK(rshare_pd_unimport(imp2));
	CHECK_ST(rshare_pd_unimport(imp2), RSHARE_E_STALE);
	CHECK_OK(rshare_pd_handle(imp, &h2)); /* unaffected */
	CHECK_OK(rshare_pd_unimport(imp));
}

/* Bad imports. */
static void case_import_refusals(void)
{
	unsigned char vblob[RSHARE_BLOB_MAX];
	rshare_pd *imp2;
	rshare_var *var;
	size_t vlen;

	CHECK_ST(rshare_pd_import(fx.dev, fx.blob, fx.len, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_pd_import(fx.dev, NULL, fx.len, &imp2), RSHARE_E_INVAL);
	CHECK_ST(rshare_pd_import(fx.dev, fx.blob, fx.len - 1, &imp2), RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(rshare_pd_import(fx.other, fx.blob, fx.len, &imp2), RSHARE_E_DEVICE_MISMATCH);
	CHECK(strstr(rshare_last_error(), "object table") != NULL);
	REQUIRE_OK(rshare_var_alloc(fx.dev, 0, &var));
	vlen = export_var(var, vblob);
	CHECK_ST(rshare_pd_import(fx.dev, vblob, vlen, &imp2), RSHARE_E_BLOB_KIND);
	CHECK(strstr(rshare_last_error(), "VAR") != NULL);
	CHECK_ST(rshare_var_import(fx.dev, fx.blob, fx.len, (rshare_var **)&imp2),
		 RSHARE_E_BLOB_KIND);
	CHECK_OK(rshare_var_free(var));
}

/* Free destroys for every handle; the others can only unimport. */
static void case_free_destroys(void)
{
	rshare_pd *imp, *imp2;
	uint32_t h2;

	CHECK_OK(rshare_pd_import(fx.dev, fx.blob, fx.len, &imp));
	CHECK_OK(rshare_pd_free(fx.pd));
	CHECK_ST(rshare_pd_free(fx.pd), RSHARE_E_STALE);
	fx.pd = NULL;
	CHECK_ST(rshare_pd_import(fx.dev, fx.blob, fx.len, &imp2), RSHARE_E_NOT_FOUND);
	CHECK(strstr(rshare_last_error(), "freed") != NULL);
	CHECK_ST(rshare_pd_free(imp), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_handle(imp, &h2)); /* a failed free keeps the handle */
	CHECK_OK(rshare_pd_unimport(imp));
}

/* A reused kernel handle does not revive an old blob: the table's serial
 * tells the new PD from the freed one. */
static void case_reused_handle_old_blob(void)
{
	rshare_pd *pd, *imp2;
	uint32_t h2;

	CHECK_OK(rshare_pd_free(fx.pd));
	fx.pd = NULL;
	REQUIRE_OK(rshare_pd_alloc(fx.dev, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h2));
	CHECK(h2 == fx.h);
	CHECK_ST(rshare_pd_import(fx.dev, fx.blob, fx.len, &imp2), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_free(pd));
}

/* Allocated handles can be unimported too: the object lives on. */
static void case_unimport_allocated(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_pd *pd, *imp;
	size_t len;

	REQUIRE_OK(rshare_pd_alloc(fx.dev, &pd));
	len = export_pd(pd, blob);
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_pd_import(fx.dev, blob, len, &imp));
	CHECK_OK(rshare_pd_free(imp));
}

/* A full table says NOMEM and recovers. */
static void case_table_full(void)
{
	static rshare_pd *many[MANY];
	rshare_pd *pd;
	int i;

	for (i = 0; i < MANY; i++)
		if (rshare_pd_alloc(fx.dev, &many[i]) != RSHARE_OK)
			break;
	CHECK(i < MANY);
	CHECK_ST(rshare_pd_alloc(fx.dev, &pd), RSHARE_E_NOMEM);
	CHECK(strstr(rshare_last_error(), "full") != NULL);
	while (i--)
		CHECK_OK(rshare_pd_free(many[i]));
	CHECK_OK(rshare_pd_alloc(fx.dev, &pd));
	CHECK_OK(rshare_pd_free(pd));
}

#define T_PROGRAM_test_pd ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
