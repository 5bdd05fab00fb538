/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* PD life cycle: alloc, export, import, unimport, free, and their failures. */
#include "harness.h"

/* More than any table holds (sim0: 262,144 objects). */
#define MANY 300000

int main(void)
{
	unsigned char blob[RSHARE_BLOB_MAX], vblob[RSHARE_BLOB_MAX], small[8];
	rshare_device *dev, *other;
	static rshare_pd *many[MANY];
	rshare_pd *pd, *imp, *imp2;
	rshare_var *var;
	uint32_t h, h2;
	size_t len, vlen, n;
	int i, kind;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_open("sim0", &other));
	CHECK_ST(rshare_pd_alloc(dev, NULL), RSHARE_E_INVAL);
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK_ST(rshare_pd_handle(pd, NULL), RSHARE_E_INVAL);

	/* Export with the (buf, cap, len) convention. */
	CHECK_ST(rshare_pd_export(pd, NULL, 0, &len), RSHARE_E_NOSPACE);
	CHECK(len > 0 && len <= RSHARE_BLOB_MAX && len < 100);
	n = len;
	len = 0;
	CHECK_ST(rshare_pd_export(pd, small, sizeof(small), &len), RSHARE_E_NOSPACE);
	CHECK(len == n);
	CHECK_ST(rshare_pd_export(pd, blob, sizeof(blob), NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_pd_export(pd, blob, n, &len));
	CHECK(len == n);
	CHECK_OK(rshare_blob_kind(blob, len, &kind));
	CHECK(kind == RSHARE_KIND_PD);

	/* Import gives the same kernel handle; imports are independent. */
	CHECK_OK(rshare_pd_import(dev, blob, len, &imp));
	CHECK_OK(rshare_pd_handle(imp, &h2));
	CHECK(h2 == h);
	CHECK(imp != pd);
	CHECK_OK(rshare_pd_import(dev, blob, len, &imp2));
	CHECK_OK(rshare_pd_unimport(imp2));
	CHECK_ST(rshare_pd_unimport(imp2), RSHARE_E_STALE);
	CHECK_OK(rshare_pd_handle(imp, &h2)); /* unaffected */

	/* Bad imports. */
	CHECK_ST(rshare_pd_import(dev, blob, len, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_pd_import(dev, NULL, len, &imp2), RSHARE_E_INVAL);
	CHECK_ST(rshare_pd_import(dev, blob, len - 1, &imp2), RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(rshare_pd_import(other, blob, len, &imp2), RSHARE_E_DEVICE_MISMATCH);
	CHECK(strstr(rshare_last_error(), "object table") != NULL);
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	vlen = export_var(var, vblob);
	CHECK_ST(rshare_pd_import(dev, vblob, vlen, &imp2), RSHARE_E_BLOB_KIND);
	CHECK(strstr(rshare_last_error(), "VAR") != NULL);
	CHECK_ST(rshare_var_import(dev, blob, len, (rshare_var **)&imp2), RSHARE_E_BLOB_KIND);

	/* Free destroys for every handle; the others can only unimport. */
	CHECK_OK(rshare_pd_free(pd));
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_STALE);
	CHECK_ST(rshare_pd_import(dev, blob, len, &imp2), RSHARE_E_NOT_FOUND);
	CHECK(strstr(rshare_last_error(), "freed") != NULL);
	CHECK_ST(rshare_pd_free(imp), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_handle(imp, &h2)); /* a failed free keeps the handle */
	CHECK_OK(rshare_pd_unimport(imp));

	/* A reused kernel handle does not revive an old blob: the table's
	 * serial tells the new PD from the freed one. */
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h2));
	CHECK(h2 == h);
	CHECK_ST(rshare_pd_import(dev, blob, len, &imp2), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_free(pd));

	/* Allocated handles can be unimported too: the object lives on. */
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_pd_import(dev, blob, len, &imp));
	CHECK_OK(rshare_pd_free(imp));

	/* A full table says NOMEM and recovers. */
	for (i = 0; i < MANY; i++)
		if (rshare_pd_alloc(dev, &many[i]) != RSHARE_OK)
			break;
	CHECK(i < MANY);
	CHECK_ST(rshare_pd_alloc(dev, &pd), RSHARE_E_NOMEM);
	CHECK(strstr(rshare_last_error(), "full") != NULL);
	while (i--)
		CHECK_OK(rshare_pd_free(many[i]));
	CHECK_OK(rshare_pd_alloc(dev, &pd));
	CHECK_OK(rshare_pd_free(pd));

	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(other));
	CHECK_OK(rshare_device_close(dev));
	TEST_DONE();
}
