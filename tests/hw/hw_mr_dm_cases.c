/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MRs and device memory through the hardware provider, and what the
 * device reports it can do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "hw_suite.h"

static uint32_t caps_of(rshare_device *dev)
{
	uint32_t caps = 0;

	CHECK_OK(rshare_device_caps(dev, &caps));
	return caps;
}

void case_caps(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(STANDIN_OTHER), *bare;
	/* Sharing MRs is what a shared buffer needs besides the core's memfd. */
	uint32_t base = RSHARE_CAP_PD | RSHARE_CAP_NATIVE | RSHARE_CAP_MR | RSHARE_CAP_BUF;

	/* The stand-in's libibverbs has MR (1.10) and DM (1.13) sharing; its
	 * libmlx5 has VAR sharing only as rdma-core 63. A context rshare
	 * opened has a ledger; one imported from a bare fd does not. */
	CHECK(caps_of(a) == (base | RSHARE_CAP_DM | RSHARE_CAP_LEDGER |
			     (t->var_sharing ? RSHARE_CAP_VAR : 0)));
	bare = hw_import_dev(a);
	CHECK(caps_of(bare) == (base | RSHARE_CAP_DM | (t->var_sharing ? RSHARE_CAP_VAR : 0)));
	CHECK_OK(rshare_device_close(bare));
	/* The other provider cannot import anything (libibverbs' dummy ops
	 * answer EOPNOTSUPP): no sharing capability at all. */
	CHECK(caps_of(c) == RSHARE_CAP_NATIVE);
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

void case_native(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	struct ibv_context *ib = NULL;
	struct ibv_pd *ibpd = NULL;
	rshare_pd *pd;
	uint32_t h;
	int fd;

	/* Borrowed rdma-core objects: the very ones rshare uses. */
	CHECK_OK(rshare_device_native(a, (void **)&ib));
	REQUIRE_OK(rshare_device_fd(a, &fd));
	CHECK(ib && ib->cmd_fd == fd);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	CHECK_OK(rshare_pd_native(pd, (void **)&ibpd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK(ibpd && ibpd->handle == h && ibpd->context == ib);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}

void case_mr_share(const struct hw_target *t)
{
	unsigned char pblob[RSHARE_BLOB_MAX], mblob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_pd *pd, *pdb;
	rshare_mr *mr, *copy = NULL, *again = NULL;
	struct ibv_mr *ibmr = NULL;
	uint64_t addr, length, addr2, length2;
	uint32_t lkey, rkey, access, lkey2, rkey2, access2;
	const uint32_t want = RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ;
	size_t plen, mlen;
	char *buf = calloc(1, 8192);

	REQUIRE(buf);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, pblob, sizeof(pblob), &plen));
	REQUIRE_OK(rshare_pd_import(b, pblob, plen, &pdb));
	/* Registered through the imported PD, so only the kernel knows a's
	 * PD has an MR. */
	REQUIRE_OK(rshare_mr_reg(pdb, buf, 8192, want, &mr));
	CHECK_OK(rshare_mr_attrs(mr, &addr, &length, &lkey, &rkey, &access));
	CHECK(addr == (uintptr_t)buf && length == 8192 && access == want);
	CHECK_OK(rshare_mr_native(mr, (void **)&ibmr));
	CHECK(ibmr && ibmr->lkey == lkey && ibmr->rkey == rkey);
	REQUIRE_OK(rshare_mr_export(mr, mblob, sizeof(mblob), &mlen));
	/* The kernel's rule: remote write needs local write. */
	CHECK_ST(rshare_mr_reg(pdb, buf, 4096, RSHARE_ACCESS_REMOTE_WRITE, &again),
		 RSHARE_E_INVAL);
	CHECK(rshare_last_errno() == EINVAL && again == NULL);

	CHECK_OK(rshare_mr_import(pd, mblob, mlen, &copy));
	CHECK_OK(rshare_mr_attrs(copy, &addr2, &length2, &lkey2, &rkey2, &access2));
	CHECK(lkey2 == lkey && rkey2 == rkey && length2 == length && access2 == want);
	CHECK(addr2 == addr); /* the registering process's address, as carried */
	CHECK_OK(rshare_mr_unimport(copy));

	/* The kernel's rule: a PD with MRs cannot be destroyed. */
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK(rshare_last_errno() == EBUSY);
	CHECK_MSG("in use");
	CHECK_OK(rshare_mr_dereg(mr));
	/* Deregistered: the blob names nothing now. */
	CHECK_ST(rshare_mr_import(pd, mblob, mlen, &again), RSHARE_E_NOT_FOUND);
	CHECK(again == NULL);
	CHECK_OK(rshare_pd_unimport(pdb));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
	free(buf);
}

void case_mr_handle_reused(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *pd;
	rshare_mr *m1, *m2, *wrong = NULL;
	uint32_t h1, h2, k1, k2;
	size_t len;
	char *buf = calloc(1, 4096);

	REQUIRE(buf);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_mr_reg(pd, buf, 4096, RSHARE_ACCESS_LOCAL_WRITE, &m1));
	REQUIRE_OK(rshare_mr_export(m1, blob, sizeof(blob), &len));
	CHECK_OK(rshare_mr_handle(m1, &h1));
	CHECK_OK(rshare_mr_attrs(m1, NULL, NULL, &k1, NULL, NULL));
	CHECK_OK(rshare_mr_dereg(m1));
	/* Same memory, size class and access: mlx5's mkey cache hands the
	 * same mkey back, so handle, keys and length all match. Only the
	 * ledger (the dereg went through rshare) tells the MRs apart. */
	REQUIRE_OK(rshare_mr_reg(pd, buf, 4096, RSHARE_ACCESS_LOCAL_WRITE, &m2));
	CHECK_OK(rshare_mr_handle(m2, &h2));
	CHECK_OK(rshare_mr_attrs(m2, NULL, NULL, &k2, NULL, NULL));
	CHECK(h2 == h1 && k2 == k1);
	CHECK_ST(rshare_mr_import(pd, blob, len, &wrong), RSHARE_E_NOT_FOUND);
	CHECK_MSG("freed since this blob was made");
	CHECK(wrong == NULL);
	CHECK_OK(rshare_mr_dereg(m2));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
	free(buf);
}

void case_dm_share(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_dm *dm, *copy = NULL, *again = NULL;
	struct ibv_dm *ibdm = NULL;
	char got[16] = "";
	uint64_t length = 0;
	uint32_t h;
	size_t len;

	REQUIRE_OK(rshare_dm_alloc(a, 1000, &dm));
	CHECK_OK(rshare_dm_length(dm, &length));
	CHECK(length == 1000);
	CHECK_OK(rshare_dm_handle(dm, &h));
	CHECK_OK(rshare_dm_native(dm, (void **)&ibdm));
	CHECK(ibdm && ibdm->handle == h);
	CHECK_OK(rshare_dm_read(dm, 0, got, sizeof(got)));
	if (t->standin) /* the stand-in hands memory out zeroed */
		CHECK(memcmp(got, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) == 0);
	CHECK_OK(rshare_dm_write(dm, 988, "0123456789AB", 12));
	CHECK_ST(rshare_dm_write(dm, 992, "0123456789AB", 12), RSHARE_E_INVAL);
	/* mlx5 copies whole 4-byte words only. */
	CHECK_ST(rshare_dm_write(dm, 2, "0123", 4), RSHARE_E_INVAL);
	CHECK(rshare_last_errno() == EINVAL);
	CHECK_MSG("multiples of 4");
	CHECK_ST(rshare_dm_read(dm, 0, got, 6), RSHARE_E_INVAL);
	{ /* Not mapped on hardware (yet): said, and the DM is unharmed. */
		void *addr = got;
		uint32_t caps = 0;

		CHECK_OK(rshare_device_caps(a, &caps));
		CHECK(!(caps & RSHARE_CAP_DM_MAP));
		CHECK_ST(rshare_dm_map(dm, &addr), RSHARE_E_UNSUPPORTED);
		CHECK(addr == got);
		CHECK_OK(rshare_dm_unmap(dm)); /* nothing mapped: a no-op */
	}
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));

	/* Another context of the table reads what a wrote, and back. */
	REQUIRE_OK(rshare_dm_import(b, blob, len, &copy));
	CHECK_OK(rshare_dm_read(copy, 988, got, 12));
	CHECK(memcmp(got, "0123456789AB", 12) == 0);
	CHECK_OK(rshare_dm_write(copy, 0, "from b!\0", 8));
	CHECK_OK(rshare_dm_read(dm, 0, got, 8));
	CHECK(memcmp(got, "from b!", 8) == 0);
	CHECK_OK(rshare_dm_unimport(copy));

	CHECK_OK(rshare_dm_free(dm));
	CHECK_ST(rshare_dm_import(b, blob, len, &again), RSHARE_E_NOT_FOUND);
	CHECK_MSG("ibv_import_dm");
	CHECK(again == NULL);
	/* More than the device's max_dm_size: INVAL naming it, before
	 * rdma-core (mlx5_alloc_dm answers EINVAL for it too). */
	if (t->standin) {
		CHECK_ST(rshare_dm_alloc(a, 1u << 30, &again), RSHARE_E_INVAL);
		CHECK_MSG("max_dm_size");
	} else
		CHECK(rshare_dm_alloc(a, 1ull << 40, &again) != RSHARE_OK);
	CHECK(again == NULL);
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

void case_dm_not_mlx5(const struct hw_target *t)
{
	rshare_device *c = hw_open_dev(STANDIN_OTHER), *a;
	rshare_dm *dm = NULL;

	/* An mlx5 function without on-chip memory: max_dm_size is 0, mlx5
	 * answers EINVAL for any size, rshare says why and reports no DM. */
	hw_hook("STANDIN_MAX_DM_SIZE", "0");
	a = hw_open_dev(t->name);
	hw_hook("STANDIN_MAX_DM_SIZE", NULL);
	CHECK(!(caps_of(a) & RSHARE_CAP_DM));
	CHECK_ST(rshare_dm_alloc(a, 64, &dm), RSHARE_E_UNSUPPORTED);
	CHECK_MSG("max_dm_size is 0");
	CHECK(dm == NULL);
	CHECK_OK(rshare_device_close(a));
	/* No alloc_dm op in its verbs_context: verbs.h's inline says
	 * EOPNOTSUPP. */
	CHECK_ST(rshare_dm_alloc(c, 64, &dm), RSHARE_E_UNSUPPORTED);
	CHECK(rshare_last_errno() == EOPNOTSUPP);
	CHECK_MSG("lacks device memory");
	CHECK(dm == NULL);
	CHECK_OK(rshare_device_close(c));
}
