/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* VAR life cycle, attributes and the mapping of its page. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

int main(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev, *imp_dev, *other;
	rshare_var *var, *imp, *vars[80];
	uint32_t page, page2, length;
	uint64_t off, off2;
	void *a, *b, *c;
	size_t len;
	int fd, i, kind;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_open("sim0", &other));
	CHECK_ST(rshare_var_alloc(dev, 2, &var), RSHARE_E_INVAL);
	CHECK(strstr(rshare_last_error(), "flags") != NULL);
	CHECK_ST(rshare_var_alloc(dev, 0, NULL), RSHARE_E_INVAL);
	REQUIRE_OK(rshare_var_alloc(dev, RSHARE_VAR_FLAG_TLP, &var));
	CHECK_OK(rshare_var_free(var));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));

	CHECK_OK(rshare_var_attrs(var, &page, &length, &off));
	CHECK(length == (uint32_t)sysconf(_SC_PAGESIZE));
	CHECK(off % length == 0 && off > 0);
	CHECK_OK(rshare_var_attrs(var, NULL, NULL, NULL));

	CHECK_ST(rshare_var_export(var, NULL, 0, &len), RSHARE_E_NOSPACE);
	CHECK(len > 44 && len < 100);
	len = export_var(var, blob);
	CHECK_OK(rshare_blob_kind(blob, len, &kind));
	CHECK(kind == RSHARE_KIND_VAR);

	/* Map: same address when repeated, NULL out refused. */
	CHECK_ST(rshare_var_map(var, NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_var_map(var, &a));
	CHECK_OK(rshare_var_map(var, &b));
	CHECK(a == b);
	CHECK(((volatile uint8_t *)a)[0] == 0); /* a new VAR page starts zeroed */

	/* An import through another context sees the same page. */
	CHECK_OK(rshare_device_fd(dev, &fd));
	REQUIRE_OK(rshare_device_import(fd, &imp_dev));
	REQUIRE_OK(rshare_var_import(imp_dev, blob, len, &imp));
	CHECK_OK(rshare_var_attrs(imp, &page2, NULL, &off2));
	CHECK(page2 == page && off2 == off);
	CHECK_OK(rshare_var_map(imp, &c));
	CHECK(c != a);
	((volatile uint32_t *)a)[7] = 0xfeedf00d;
	CHECK(((volatile uint32_t *)c)[7] == 0xfeedf00d);
	((volatile uint32_t *)c)[8] = 0x1234;
	CHECK(((volatile uint32_t *)a)[8] == 0x1234);

	/* Unmap: idempotent; map again gives a working mapping. */
	CHECK_OK(rshare_var_unmap(imp));
	CHECK_OK(rshare_var_unmap(imp));
	CHECK_OK(rshare_var_map(imp, &c));
	CHECK(((volatile uint32_t *)c)[7] == 0xfeedf00d);
	CHECK_OK(rshare_var_unimport(imp)); /* unmaps too */
	CHECK_ST(rshare_var_unmap(imp), RSHARE_E_STALE);
	CHECK_ST(rshare_var_import(other, blob, len, &imp), RSHARE_E_DEVICE_MISMATCH);

	/* Free destroys it for every process; its page is reused zeroed. */
	CHECK_OK(rshare_var_free(var));
	CHECK_ST(rshare_var_import(imp_dev, blob, len, &imp), RSHARE_E_NOT_FOUND);
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	CHECK_OK(rshare_var_attrs(var, &page2, NULL, NULL));
	CHECK(page2 == page);
	CHECK_OK(rshare_var_map(var, &a));
	CHECK(((volatile uint32_t *)a)[7] == 0);
	CHECK_OK(rshare_var_free(var));

	/* VAR pages run out: NOMEM, then recovery. */
	for (i = 0; i < 80; i++)
		if (rshare_var_alloc(dev, 0, &vars[i]) != RSHARE_OK)
			break;
	CHECK(i > 0 && i < 80);
	CHECK_ST(rshare_var_alloc(dev, 0, &var), RSHARE_E_NOMEM);
	CHECK(strstr(rshare_last_error(), "VAR pages") != NULL);
	while (i--)
		CHECK_OK(i % 2 ? rshare_var_free(vars[i]) : rshare_var_unimport(vars[i]));
	CHECK_OK(rshare_device_close(imp_dev));
	CHECK_OK(rshare_device_close(other));
	CHECK_OK(rshare_device_close(dev));
	TEST_DONE();
}
