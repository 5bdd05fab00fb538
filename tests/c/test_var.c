/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* VAR life cycle, attributes and the mapping of its page. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

/* Every case: sim0 twice (the second a separately opened table), a VAR,
 * its blob and attributes. */
static struct {
	rshare_device *dev, *other;
	rshare_var *var; /* NULL once a case has freed it */
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len;
	uint32_t page, length;
	uint64_t off;
} fx;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &fx.dev));
	REQUIRE_OK(rshare_device_open("sim0", &fx.other));
	REQUIRE_OK(rshare_var_alloc(fx.dev, 0, &fx.var));
	REQUIRE_OK(rshare_var_attrs(fx.var, &fx.page, &fx.length, &fx.off));
	fx.len = export_var(fx.var, fx.blob);
}

static void teardown(void)
{
	if (fx.var)
		CHECK_OK(rshare_var_free(fx.var));
	CHECK_OK(rshare_device_close(fx.other));
	CHECK_OK(rshare_device_close(fx.dev));
}

static void case_alloc_flags(void)
{
	rshare_var *var;

	CHECK_ST(rshare_var_alloc(fx.dev, 2, &var), RSHARE_E_INVAL);
	CHECK(strstr(rshare_last_error(), "flags") != NULL);
	CHECK_ST(rshare_var_alloc(fx.dev, 0, NULL), RSHARE_E_INVAL);
	REQUIRE_OK(rshare_var_alloc(fx.dev, RSHARE_VAR_FLAG_TLP, &var));
	CHECK_OK(rshare_var_free(var));
}

static void case_attrs_export(void)
{
	size_t len;
	int kind;

	CHECK(fx.length == (uint32_t)sysconf(_SC_PAGESIZE));
	CHECK(fx.off % fx.length == 0 && fx.off > 0);
	CHECK_OK(rshare_var_attrs(fx.var, NULL, NULL, NULL));
	CHECK_ST(rshare_var_export(fx.var, NULL, 0, &len), RSHARE_E_NOSPACE);
	CHECK(len > 44 && len < 100);
	CHECK_OK(rshare_blob_kind(fx.blob, fx.len, &kind));
	CHECK(kind == RSHARE_KIND_VAR);
}

/* Map: same address when repeated, NULL out refused. */
static void case_map_same_address(void)
{
	void *a, *b;

	CHECK_ST(rshare_var_map(fx.var, NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_var_map(fx.var, &a));
	CHECK_OK(rshare_var_map(fx.var, &b));
	CHECK(a == b);
	CHECK(((volatile uint8_t *)a)[0] == 0); /* a new VAR page starts zeroed */
}

/* An import through another context sees the same page; unmap is
 * idempotent and map again gives a working mapping. */
static void case_import_same_page(void)
{
	rshare_device *imp_dev;
	rshare_var *imp;
	uint32_t page2;
	uint64_t off2;
	void *a, *c;
	int fd;

	CHECK_OK(rshare_var_map(fx.var, &a));
	CHECK_OK(rshare_device_fd(fx.dev, &fd));
	REQUIRE_OK(rshare_device_import(fd, &imp_dev));
	REQUIRE_OK(rshare_var_import(imp_dev, fx.blob, fx.len, &imp));
	CHECK_OK(rshare_var_attrs(imp, &page2, NULL, &off2));
	CHECK(page2 == fx.page && off2 == fx.off);
	CHECK_OK(rshare_var_map(imp, &c));
	CHECK(c != a);
	((volatile uint32_t *)a)[7] = 0xfeedf00d;
	CHECK(((volatile uint32_t *)c)[7] == 0xfeedf00d);
	((volatile uint32_t *)c)[8] = 0x1234;
	CHECK(((volatile uint32_t *)a)[8] == 0x1234);
	CHECK_OK(rshare_var_unmap(imp));
	CHECK_OK(rshare_var_unmap(imp));
	CHECK_OK(rshare_var_map(imp, &c));
	CHECK(((volatile uint32_t *)c)[7] == 0xfeedf00d);
	CHECK_OK(rshare_var_unimport(imp)); /* unmaps too */
	CHECK_ST(rshare_var_unmap(imp), RSHARE_E_STALE);
	CHECK_ST(rshare_var_import(fx.other, fx.blob, fx.len, &imp), RSHARE_E_DEVICE_MISMATCH);
	CHECK_OK(rshare_device_close(imp_dev));
}

/* Free destroys it for every process; its page is reused zeroed. */
static void case_free_reuses_page_zeroed(void)
{
	rshare_device *imp_dev;
	rshare_var *imp, *var;
	uint32_t page2;
	void *a;
	int fd;

	CHECK_OK(rshare_var_map(fx.var, &a));
	((volatile uint32_t *)a)[7] = 0xfeedf00d;
	CHECK_OK(rshare_device_fd(fx.dev, &fd));
	REQUIRE_OK(rshare_device_import(fd, &imp_dev));
	CHECK_OK(rshare_var_free(fx.var));
	fx.var = NULL;
	CHECK_ST(rshare_var_import(imp_dev, fx.blob, fx.len, &imp), RSHARE_E_NOT_FOUND);
	REQUIRE_OK(rshare_var_alloc(fx.dev, 0, &var));
	CHECK_OK(rshare_var_attrs(var, &page2, NULL, NULL));
	CHECK(page2 == fx.page);
	CHECK_OK(rshare_var_map(var, &a));
	CHECK(((volatile uint32_t *)a)[7] == 0);
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(imp_dev));
}

/* VAR pages run out: NOMEM, then recovery. */
static void case_pages_run_out(void)
{
	rshare_var *var, *vars[80];
	int i;

	for (i = 0; i < 80; i++)
		if (rshare_var_alloc(fx.dev, 0, &vars[i]) != RSHARE_OK)
			break;
	CHECK(i > 0 && i < 80);
	CHECK_ST(rshare_var_alloc(fx.dev, 0, &var), RSHARE_E_NOMEM);
	CHECK(strstr(rshare_last_error(), "VAR pages") != NULL);
	while (i--)
		CHECK_OK(i % 2 ? rshare_var_free(vars[i]) : rshare_var_unimport(vars[i]));
}

#define T_PROGRAM_test_var ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
