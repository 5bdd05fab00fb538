/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stand-in answers as upstream rdma-core and the kernel do, and rshare
 * turns each answer into the right status and message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hw_suite.h"

void case_errno_statuses(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *pd = NULL;

	/* The kernel's words for "not supported" and "used up". */
	hw_hook("STANDIN_FAIL_ALLOC_PD", "93" /* EPROTONOSUPPORT */);
	CHECK_ST(rshare_pd_alloc(a, &pd), RSHARE_E_UNSUPPORTED);
	CHECK(rshare_last_errno() == EPROTONOSUPPORT);
	CHECK_MSG("lacks");
	hw_hook("STANDIN_FAIL_ALLOC_PD", "28" /* ENOSPC */);
	CHECK_ST(rshare_pd_alloc(a, &pd), RSHARE_E_NOMEM);
	CHECK_MSG("no free entry");
	hw_hook("STANDIN_FAIL_ALLOC_PD", "16" /* EBUSY */);
	CHECK_ST(rshare_pd_alloc(a, &pd), RSHARE_E_BUSY);
	CHECK_MSG("in use");
	hw_hook("STANDIN_FAIL_ALLOC_PD", "5" /* EIO */);
	CHECK_ST(rshare_pd_alloc(a, &pd), RSHARE_E_IO);
	CHECK_MSG("removed or reset");
	hw_hook("STANDIN_FAIL_ALLOC_PD", NULL);
	CHECK(pd == NULL);
	CHECK_OK(rshare_device_close(a));
}

void case_var_flags(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_var *var = NULL;
	int s = rshare_var_alloc(a, RSHARE_VAR_FLAG_TLP, &var);

	if (t->var_sharing) {
		/* rdma-core 63 knows the TLP flag. */
		CHECK_OK(s);
		if (s == RSHARE_OK)
			CHECK_OK(rshare_var_free(var));
	} else {
		/* rdma-core 44 rejects every flag, TLP included, with EOPNOTSUPP. */
		CHECK_ST(s, RSHARE_E_UNSUPPORTED);
		CHECK(rshare_last_errno() == EOPNOTSUPP);
		CHECK_MSG("TLP");
		CHECK(var == NULL);
	}
	CHECK_OK(rshare_device_close(a));
}

void case_var_no_kernel_support(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_var *var = NULL;

	/* An mlx5 device whose kernel lacks the VAR object. */
	hw_hook("STANDIN_NO_VAR_SUPPORT", "1");
	CHECK_ST(rshare_var_alloc(a, 0, &var), RSHARE_E_UNSUPPORTED);
	hw_hook("STANDIN_NO_VAR_SUPPORT", NULL);
	CHECK(rshare_last_errno() == EPROTONOSUPPORT);
	CHECK_MSG("kernel driver lacks VARs");
	CHECK(var == NULL);
	CHECK_OK(rshare_device_close(a));
}

void case_disassociated(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *b = NULL;
	rshare_pd *pd = NULL, *pd2 = NULL;
	int fd = -1;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_device_fd(a, &fd));
	hw_hook("STANDIN_DISASSOCIATED", "1");
	CHECK_ST(rshare_pd_alloc(a, &pd2), RSHARE_E_IO);
	CHECK(rshare_last_errno() == EIO);
	CHECK_MSG("removed or reset");
	/* The removed device's char device is gone: nothing to import. */
	CHECK_ST(rshare_device_import(fd, &b), RSHARE_E_NODEV);
	/* rdma-core turns EIO from a destroy into success only when
	 * RDMAV_ALLOW_DISASSOC_DESTROY is set (libibverbs cmd_write.h,
	 * verbs_is_destroy_err): otherwise the caller sees EIO and keeps
	 * the object, which unimport still releases. */
	hw_hook("RDMAV_ALLOW_DISASSOC_DESTROY", NULL);
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_IO);
	CHECK(rshare_last_errno() == EIO);
	CHECK_MSG("removed or reset");
	hw_hook("RDMAV_ALLOW_DISASSOC_DESTROY", "0"); /* "0" is off, as check_env */
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_IO);
	hw_hook("RDMAV_ALLOW_DISASSOC_DESTROY", "1");
	CHECK_OK(rshare_pd_free(pd));
	hw_hook("RDMAV_ALLOW_DISASSOC_DESTROY", NULL);
	hw_hook("STANDIN_DISASSOCIATED", NULL);
	CHECK(pd2 == NULL && b == NULL);
	CHECK_OK(rshare_device_close(a));
}

void case_handles_lowest_free(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *p1, *p2, *p3;
	uint32_t h1, h2, h3;

	REQUIRE_OK(rshare_pd_alloc(a, &p1));
	REQUIRE_OK(rshare_pd_alloc(a, &p2));
	CHECK_OK(rshare_pd_handle(p1, &h1));
	CHECK_OK(rshare_pd_handle(p2, &h2));
	CHECK(h2 == h1 + 1);
	CHECK_OK(rshare_pd_free(p1));
	/* The kernel hands the freed number to the next object. */
	REQUIRE_OK(rshare_pd_alloc(a, &p3));
	CHECK_OK(rshare_pd_handle(p3, &h3));
	CHECK(h3 == h1);
	CHECK_OK(rshare_pd_free(p2));
	CHECK_OK(rshare_pd_free(p3));
	CHECK_OK(rshare_device_close(a));
}

static void attrs(rshare_var *v, uint32_t *page, uint64_t *off)
{
	REQUIRE_OK(rshare_var_attrs(v, page, NULL, off));
}

void case_var_pages_device_wide(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(t->name), *b = NULL;
	rshare_var *va, *vc, *copy = NULL, *vn, *vm;
	uint32_t pa, pc, pn, pm;
	uint64_t oa, oc, on, om;
	void *addr = NULL;
	size_t len;
	int fd;

	REQUIRE_OK(rshare_device_fd(a, &fd));
	REQUIRE_OK(rshare_device_import(fd, &b));
	/* Two contexts of one device: pages device-wide, offsets per context,
	 * lowest free from mlx5's first mmap offset (page 0x900): in a's
	 * ufile the UARs of a's open and b's import hold entries 0 and 1,
	 * in c's c's UAR holds entry 0. */
	REQUIRE_OK(rshare_var_alloc(a, 0, &va));
	REQUIRE_OK(rshare_var_alloc(c, 0, &vc));
	attrs(va, &pa, &oa);
	attrs(vc, &pc, &oc);
	CHECK(pa == STANDIN_VAR_PAGE_ID0 && pc == STANDIN_VAR_PAGE_ID0 + 1);
	CHECK(oa == (0x900 + 2) * 4096ull && oc == (0x900 + 1) * 4096ull);

	/* Freed while mapped elsewhere: the page and offset stay taken until
	 * the last mapping goes, and the offset no longer maps. */
	REQUIRE_OK(rshare_var_export(va, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_var_import(b, blob, len, &copy));
	CHECK_OK(rshare_var_map(copy, &addr));
	CHECK_OK(rshare_var_free(va));
	REQUIRE_OK(rshare_var_alloc(a, 0, &vn));
	attrs(vn, &pn, &on);
	CHECK(pn == STANDIN_VAR_PAGE_ID0 + 2 && on != oa);
	CHECK_OK(rshare_var_unmap(copy));
	CHECK(rshare_var_map(copy, &addr) != RSHARE_OK);
	CHECK(rshare_last_errno() == EINVAL);
	CHECK_OK(rshare_var_unimport(copy));
	/* Last mapping gone: the lowest page and offset are free again. */
	REQUIRE_OK(rshare_var_alloc(a, 0, &vm));
	attrs(vm, &pm, &om);
	CHECK(pm == pa && om == oa);

	CHECK_OK(rshare_var_free(vm));
	CHECK_OK(rshare_var_free(vn));
	CHECK_OK(rshare_var_free(vc));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}
