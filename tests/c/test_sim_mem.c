/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sim0's memory regions and device memory: through the public API across
 * processes (keys, PD binding, a PD with MRs refused by another process,
 * device memory written in one process and read in another, the 256 KiB
 * budget in contiguous granules), through the provider table directly for
 * what a blob cannot say (attributes that disagree with the table's), and
 * with the table poisoned (a DM's granules pointed outside, a PD's MR count
 * bent, a peer killed in the middle of registering an MR).
 */
#include "provider.h"
#include "sim_peer.h"

static uint32_t mr_handle(rshare_mr *mr)
{
	uint32_t h = UINT32_MAX;

	CHECK_OK(rshare_mr_handle(mr, &h));
	return h;
}

/* In a forked child: import the PD, try to free it (the table refuses: an
 * MR lives on it), import the MR into it and read the DM. Exit status is
 * the number of failed expectations. */
static int child_side(int fd, const unsigned char *pdb, size_t pdl, const unsigned char *mrb,
		      size_t mrl, const unsigned char *dmb, size_t dml)
{
	rshare_device *dev;
	rshare_pd *pd;
	rshare_mr *mr;
	rshare_dm *dm;
	char buf[6] = "";
	int bad = 0;

	if (rshare_device_import(fd, &dev) || rshare_pd_import(dev, pdb, pdl, &pd))
		return 50;
	bad += rshare_pd_free(pd) != RSHARE_E_BUSY;
	bad += rshare_mr_import(pd, mrb, mrl, &mr) != RSHARE_OK;
	bad += rshare_mr_unimport(mr) != RSHARE_OK;
	bad += rshare_dm_import(dev, dmb, dml, &dm) != RSHARE_OK;
	bad += rshare_dm_read(dm, 100, buf, 5) != RSHARE_OK || strcmp(buf, "hello") != 0;
	bad += rshare_dm_write(dm, 200, "child", 5) != RSHARE_OK;
	bad += rshare_dm_unimport(dm) != RSHARE_OK;
	bad += rshare_pd_unimport(pd) != RSHARE_OK;
	bad += rshare_device_close(dev) != RSHARE_OK;
	return bad;
}

static rshare_device *fx_dev; /* sim0, opened for each case */
static int fx_fd;

static void case_public_api(void)
{
	rshare_device *dev = fx_dev;
	int fd = fx_fd;

	static char mem[8192];
	unsigned char pdb[RSHARE_BLOB_MAX], mrb[RSHARE_BLOB_MAX], dmb[RSHARE_BLOB_MAX];
	size_t pdl, mrl, dml;
	rshare_pd *pd, *pd2;
	rshare_mr *mr, *imp;
	rshare_dm *dm, *dms[SIM_DM_GRANULES + 1];
	uint32_t caps = 0, lkey, rkey, access, h;
	uint64_t addr, length;
	char buf[8] = "";
	int status, n;
	pid_t pid;

	CHECK_OK(rshare_device_caps(dev, &caps));
	CHECK((caps & ~(uint32_t)RSHARE_CAP_DM_MAP) ==
	      (RSHARE_CAP_PD | RSHARE_CAP_VAR | RSHARE_CAP_MR | RSHARE_CAP_DM | RSHARE_CAP_BUF));
	/* Its device memory maps where the page is its 4 KiB granule. */
	CHECK(!!(caps & RSHARE_CAP_DM_MAP) == (sysconf(_SC_PAGESIZE) == 4096));

	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd2));
	REQUIRE_OK(rshare_mr_reg(pd, mem, sizeof(mem),
				 RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ, &mr));
	CHECK_OK(rshare_mr_attrs(mr, &addr, &length, &lkey, &rkey, &access));
	h = mr_handle(mr);
	CHECK(addr == (uint64_t)(uintptr_t)mem && length == sizeof(mem));
	CHECK(lkey == rkey && lkey >> 8 == h); /* handle << 8 | key byte */
	CHECK(access == (RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ));
	REQUIRE_OK(rshare_pd_export(pd, pdb, sizeof(pdb), &pdl));
	REQUIRE_OK(rshare_mr_export(mr, mrb, sizeof(mrb), &mrl));
	CHECK_ST(rshare_mr_import(pd2, mrb, mrl, &imp), RSHARE_E_DEVICE_MISMATCH);
	CHECK_OK(rshare_mr_import(pd, mrb, mrl, &imp));
	CHECK_OK(rshare_mr_unimport(imp));

	REQUIRE_OK(rshare_dm_alloc(dev, 300, &dm));
	REQUIRE_OK(rshare_dm_export(dm, dmb, sizeof(dmb), &dml));
	CHECK_OK(rshare_dm_write(dm, 100, "hello", 5));
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_side(fd, pdb, pdl, mrb, mrl, dmb, dml));
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_OK(rshare_dm_read(dm, 200, buf, 5));
	CHECK(memcmp(buf, "child", 5) == 0);
	CHECK_ST(rshare_dm_write(dm, 296, "12345", 5), RSHARE_E_INVAL);

	/* A new registration of the same handle gets another key. */
	CHECK_OK(rshare_mr_dereg(mr));
	CHECK_ST(rshare_mr_import(pd, mrb, mrl, &imp), RSHARE_E_NOT_FOUND);
	REQUIRE_OK(rshare_mr_reg(pd, mem, sizeof(mem), 0, &mr));
	CHECK(mr_handle(mr) == h);
	CHECK_OK(rshare_mr_attrs(mr, NULL, NULL, &rkey, NULL, NULL));
	CHECK(rkey != lkey);
	CHECK_ST(rshare_mr_import(pd, mrb, mrl, &imp), RSHARE_E_NOT_FOUND); /* old blob */
	CHECK_OK(rshare_mr_dereg(mr));
	CHECK_OK(rshare_pd_free(pd)); /* no MR left: the table agrees */

	/* The budget: 256 KiB in 4 KiB granules, contiguous, reused zeroed. */
	CHECK_OK(rshare_dm_free(dm));
	for (n = 0; n <= (int)SIM_DM_GRANULES; n++)
		if (rshare_dm_alloc(dev, SIM_DM_GRANULE, &dms[n]) != RSHARE_OK)
			break;
	CHECK(n == (int)SIM_DM_GRANULES);
	CHECK_ST(rshare_dm_alloc(dev, 1, &dm), RSHARE_E_NOMEM);
	CHECK_OK(rshare_dm_write(dms[10], 0, "dirty", 5));
	CHECK_OK(rshare_dm_free(dms[10]));
	CHECK_OK(rshare_dm_free(dms[20]));
	CHECK_ST(rshare_dm_alloc(dev, 2 * SIM_DM_GRANULE, &dm), RSHARE_E_NOMEM); /* not contiguous */
	CHECK_OK(rshare_dm_free(dms[11]));
	CHECK_OK(rshare_dm_alloc(dev, 2 * SIM_DM_GRANULE, &dms[10]));
	CHECK_OK(rshare_dm_read(dms[10], 0, buf, 5));
	CHECK(memcmp(buf, "\0\0\0\0\0", 5) == 0);
	CHECK_ST(rshare_dm_alloc(dev, SIM_DM_BYTES + 1, &dm), RSHARE_E_NOMEM);
	for (int i = 0; i < n; i++)
		if (i != 11 && i != 20)
			CHECK_OK(rshare_dm_free(dms[i]));
	CHECK_OK(rshare_dm_alloc(dev, SIM_DM_BYTES, &dm)); /* all of it, once free */
	CHECK_OK(rshare_dm_free(dm));
	CHECK_OK(rshare_pd_free(pd2));
}

/* The provider's own checks, with the blob's fields set by hand. */
static void case_provider_level(void)
{
	const struct rs_provider *p = &rs_sim_provider;
	struct rs_ctx ctx = { .ops = p, .fd = -1 };
	struct rs_pd_info pd = { 0 }, pd2 = { 0 };
	struct rs_mr_info mr, bad;
	struct rs_dm_info dm, dbad;
	static char mem[64];

	REQUIRE_OK(p->open("sim0", &ctx));
	REQUIRE_OK(p->pd_alloc(&ctx, &pd));
	REQUIRE_OK(p->pd_alloc(&ctx, &pd2));
	REQUIRE_OK(p->mr_reg(&ctx, &pd, mem, sizeof(mem), 1, &mr));
	CHECK_OK(p->mr_import(&ctx, &pd, &mr));
	bad = mr, bad.length++;
	CHECK_ST(p->mr_import(&ctx, &pd, &bad), RSHARE_E_BLOB_CORRUPT);
	bad = mr, bad.rkey ^= 1;
	CHECK_ST(p->mr_import(&ctx, &pd, &bad), RSHARE_E_BLOB_CORRUPT);
	bad = mr, bad.access = 3;
	CHECK_ST(p->mr_import(&ctx, &pd, &bad), RSHARE_E_BLOB_CORRUPT);
	bad = mr, bad.pd_handle = pd2.handle;
	CHECK_ST(p->mr_import(&ctx, &pd2, &bad), RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(p->mr_import(&ctx, &pd2, &mr), RSHARE_E_DEVICE_MISMATCH);
	bad = mr, bad.serial++;
	CHECK_ST(p->mr_import(&ctx, &pd, &bad), RSHARE_E_NOT_FOUND);
	CHECK_ST(p->pd_dealloc(&ctx, &pd), RSHARE_E_BUSY);
	CHECK_OK(p->mr_dereg(&ctx, &mr));
	CHECK_OK(p->pd_dealloc(&ctx, &pd));
	CHECK_OK(p->pd_dealloc(&ctx, &pd2));

	REQUIRE_OK(p->dm_alloc(&ctx, 5000, &dm));
	CHECK_OK(p->dm_import(&ctx, &dm));
	dbad = dm, dbad.length = 8192;
	CHECK_ST(p->dm_import(&ctx, &dbad), RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(p->dm_alloc(&ctx, 0, &dbad), RSHARE_E_INVAL);
	CHECK_OK(p->dm_free(&ctx, &dm));
	CHECK_ST(p->dm_free(&ctx, &dm), RSHARE_E_NOT_FOUND);
	p->close(&ctx);
}

static uint32_t pd_for_mr, mr_for_pd;

/* Died registering an MR: the PD's count was raised, the MR not yet
 * published. */
static void half_made_mr(struct sim_table *t)
{
	t->s.intent = (struct sim_intent){ SIM_OP_ALLOC, mr_for_pd, pd_for_mr, 0 };
	t->objs[pd_for_mr].mr_count = 1;
	t->objs[mr_for_pd].pd_handle = pd_for_mr;
}

static void case_poisoned(void)
{
	rshare_device *dev = fx_dev;
	int fd = fx_fd;

	struct sim_table *t;
	size_t len;
	rshare_dm *dm;
	rshare_pd *pd;
	rshare_mr *mr;
	static char mem[64];
	char buf[16];
	uint32_t h;

	t = peer_map(fd, &len);
	/* A DM whose granules point outside the device memory, or whose
	 * length outgrows them: not found, nothing read or written. */
	REQUIRE_OK(rshare_dm_alloc(dev, 64, &dm));
	REQUIRE_OK(rshare_dm_handle(dm, &h));
	t->objs[h].dm_first = 0x7fffffff;
	CHECK_ST(rshare_dm_write(dm, 0, "x", 1), RSHARE_E_NOT_FOUND);
	CHECK_ST(rshare_dm_read(dm, 0, buf, 1), RSHARE_E_NOT_FOUND);
	t->objs[h].dm_first = 0;
	t->objs[h].length = 1ull << 40;
	CHECK_ST(rshare_dm_read(dm, 0, buf, 16), RSHARE_E_NOT_FOUND);
	t->objs[h].length = 64;
	t->objs[h].dm_count = SIM_DM_GRANULES; /* claims granules it does not own */
	CHECK_ST(rshare_dm_read(dm, 0, buf, 16), RSHARE_E_NOT_FOUND);
	t->objs[h].dm_count = 1;
	CHECK_OK(rshare_dm_read(dm, 0, buf, 16));
	CHECK_OK(rshare_dm_free(dm));

	/* A bent MR count: a huge one is a DoS (BUSY), never a crash. */
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_pd_handle(pd, &h));
	t->objs[h].mr_count = 0xffffffffu;
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	t->objs[h].mr_count = 0;

	/* Killed mid-registration: the repair puts the count back. */
	pd_for_mr = h;
	REQUIRE_OK(rshare_mr_reg(pd, mem, sizeof(mem), 0, &mr));
	mr_for_pd = mr_handle(mr);
	CHECK_OK(rshare_mr_dereg(mr));
	kill_peer(locked_peer(fd, half_made_mr));
	CHECK_OK(rshare_pd_free(pd));
	munmap(t, len);
}

static void setup(void)
{
	setenv("RSHARE_SIM_LOCK_MS", "300", 1);
	REQUIRE_OK(rshare_device_open("sim0", &fx_dev));
	REQUIRE_OK(rshare_device_fd(fx_dev, &fx_fd));
}

static void teardown(void)
{
	CHECK_OK(rshare_device_close(fx_dev));
}

#define T_PROGRAM_test_sim_mem ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
