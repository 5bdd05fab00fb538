/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory regions on the simulated device, against the 1.1 contract:
 * register, attributes, export/import into the right PD (and refusal into
 * another), the PD held busy by its MRs in this process, and across real
 * processes (a forked child receives the device fd over a channel, imports
 * the PD, then the MR into it, and checks the keys; the PD cannot be freed
 * while the child's MR lives; a dereg anywhere makes later imports
 * NOT_FOUND). Exits 77 (ctest: skipped) on a provider without MRs.
 */
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define ACCESS (RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ)

static size_t export_mr(rshare_mr *mr, unsigned char *buf)
{
	size_t len = 0;
	REQUIRE_OK(rshare_mr_export(mr, buf, RSHARE_BLOB_MAX, &len));
	return len;
}

/* The child: receive the device and "PD blob length, PD blob, MR blob",
 * import the PD then the MR into it, report the keys it sees, and
 * deregister the MR for everyone. */
static int child(int sock)
{
	unsigned char payload[2 * RSHARE_BLOB_MAX + 2];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_mr *mr;
	size_t len, pd_len;
	uint32_t lkey, rkey, access;
	uint64_t length;

	if (rshare_channel_recv(sock, &dev, payload, sizeof(payload), &len))
		return 10;
	pd_len = payload[0];
	if (rshare_pd_import(dev, payload + 1, pd_len, &pd))
		return 11;
	if (rshare_mr_import(pd, payload + 1 + pd_len, len - 1 - pd_len, &mr))
		return 12;
	if (rshare_mr_attrs(mr, NULL, &length, &lkey, &rkey, &access))
		return 13;
	if (write(sock, (uint32_t[]){ lkey, rkey, access, (uint32_t)length }, 16) != 16)
		return 14;
	if (rshare_pd_unimport(pd) != RSHARE_E_BUSY) /* its MR lives in it */
		return 15;
	if (rshare_mr_dereg(mr) || rshare_pd_unimport(pd) || rshare_device_close(dev))
		return 16;
	return 0;
}

/* The kernel rule the provider models, across processes: the parent has
 * released its own MR handle (the registration lives on), so its PD free is
 * refused by the object table, not by the core, until the child, which
 * imported PD and MR, deregisters the MR. */
static void cross_process(rshare_device *dev, rshare_pd *pd, rshare_mr *mr,
			  const unsigned char *mr_blob, size_t mr_len)
{
	unsigned char payload[2 * RSHARE_BLOB_MAX + 2];
	uint32_t seen[4], lkey, rkey;
	rshare_mr *late;
	int sv[2], status;
	size_t pd_len;
	pid_t pid;

	CHECK_OK(rshare_mr_attrs(mr, NULL, NULL, &lkey, &rkey, NULL));
	CHECK_OK(rshare_mr_unimport(mr));
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK(strstr(rshare_last_error(), "of this process") == NULL); /* the provider said it */

	pd_len = export_pd(pd, payload + 1);
	payload[0] = (unsigned char)pd_len;
	memcpy(payload + 1 + pd_len, mr_blob, mr_len);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1]));
	}
	close(sv[1]);
	CHECK_OK(rshare_channel_send(sv[0], dev, payload, 1 + pd_len + mr_len));
	CHECK(read(sv[0], seen, sizeof(seen)) == (ssize_t)sizeof(seen));
	CHECK(seen[0] == lkey && seen[1] == rkey && seen[2] == ACCESS && seen[3] == 4096);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(sv[0]);
	/* Deregistered in the child: gone for everyone, and the PD is free. */
	CHECK_ST(rshare_mr_import(pd, mr_blob, mr_len, &late), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_free(pd));
}

/* Every case: sim0, a PD (freed by the case or the teardown) and 4096
 * bytes to register. Without MRs (a provider that lacks them) the refusal
 * is checked and the case reported skipped. */
static unsigned char *mem;
static rshare_device *dev;
static rshare_pd *pd; /* NULL once freed */

static void setup(void)
{
	uint32_t caps;
	rshare_mr *mr;

	mem = malloc(4096);
	REQUIRE(mem);
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_device_caps(dev, &caps));
	if (!(caps & RSHARE_CAP_MR)) {
		/* The contract for a provider without MRs, then skip the rest. */
		CHECK_ST(rshare_mr_reg(pd, mem, 4096, ACCESS, &mr), RSHARE_E_UNSUPPORTED);
		CHECK_OK(rshare_pd_free(pd)); /* nothing was left behind */
		CHECK_OK(rshare_device_close(dev));
		free(mem);
		printf("SKIPPED: sim0 lacks RSHARE_CAP_MR (%d checks of the refusal passed)\n",
		       t_pass);
		exit(t_fail ? 1 : 77);
	}
}

static void teardown(void)
{
	if (pd)
		CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
	free(mem);
}

/* Argument checks, before any provider call. */
static void case_argument_checks(void)
{
	rshare_mr *mr;

	CHECK_ST(rshare_mr_reg(pd, NULL, 4096, ACCESS, &mr), RSHARE_E_INVAL);
	CHECK_ST(rshare_mr_reg(pd, mem, 0, ACCESS, &mr), RSHARE_E_INVAL);
	CHECK_ST(rshare_mr_reg(pd, mem, 4096, 0x100, &mr), RSHARE_E_INVAL);
	CHECK_MSG("access");
	CHECK_ST(rshare_mr_reg(pd, mem, SIZE_MAX, ACCESS, &mr), RSHARE_E_INVAL);
	CHECK_ST(rshare_mr_reg(pd, mem, 4096, ACCESS, NULL), RSHARE_E_INVAL);
}

/* Register, attributes; export: an 84-byte MR blob naming its PD; import
 * into the same PD object through an imported PD handle, but not into
 * another PD; a PD with live MR handles of this process is busy, both
 * ways; the device stays open while an MR lives (through its PD); then the
 * MR shared with another process, which deregisters it. */
static void case_register_export_import(void)
{
	unsigned char mr_blob[RSHARE_BLOB_MAX], pd_blob[RSHARE_BLOB_MAX];
	rshare_pd *pd2, *pd_imp;
	rshare_mr *mr, *imp, *mr2;
	uint64_t addr, length, v;
	uint32_t lkey, rkey, access, h, h2;
	size_t mr_len, pd_len;
	int kind;

	/* Register, attributes. */
	REQUIRE_OK(rshare_mr_reg(pd, mem, 4096, ACCESS, &mr));
	CHECK_OK(rshare_mr_attrs(mr, &addr, &length, &lkey, &rkey, &access));
	CHECK(addr == (uint64_t)(uintptr_t)mem && length == 4096 && access == ACCESS);
	CHECK_OK(rshare_mr_attrs(mr, NULL, NULL, NULL, NULL, NULL));
	CHECK_OK(rshare_mr_handle(mr, &h));

	/* Export: an 84-byte MR blob naming its PD. */
	mr_len = export_mr(mr, mr_blob);
	CHECK(mr_len == 84);
	CHECK_OK(rshare_blob_kind(mr_blob, mr_len, &kind));
	CHECK(kind == RSHARE_KIND_MR);
	CHECK_OK(rshare_pd_handle(pd, &h2));
	CHECK_OK(rshare_blob_field(mr_blob, mr_len, RSHARE_FIELD_PD_HANDLE, &v));
	CHECK(v == h2);
	CHECK_OK(rshare_blob_field(mr_blob, mr_len, RSHARE_FIELD_LKEY, &v));
	CHECK(v == lkey);
	CHECK_OK(rshare_blob_field(mr_blob, mr_len, RSHARE_FIELD_HANDLE, &v));
	CHECK(v == h);

	/* Import into the same PD object through an imported PD handle. */
	pd_len = export_pd(pd, pd_blob);
	REQUIRE_OK(rshare_pd_import(dev, pd_blob, pd_len, &pd_imp));
	REQUIRE_OK(rshare_mr_import(pd_imp, mr_blob, mr_len, &imp));
	CHECK_OK(rshare_mr_attrs(imp, &v, NULL, &lkey, &rkey, NULL));
	CHECK(v == addr);
	CHECK_OK(rshare_mr_handle(imp, &h2));
	CHECK(h2 == h);
	/* ... but not into another PD. */
	REQUIRE_OK(rshare_pd_alloc(dev, &pd2));
	CHECK_ST(rshare_mr_import(pd2, mr_blob, mr_len, &mr2), RSHARE_E_DEVICE_MISMATCH);
	CHECK_MSG("registered on PD");
	CHECK_ST(rshare_mr_import(pd2, pd_blob, pd_len, &mr2), RSHARE_E_BLOB_KIND);
	CHECK_ST(rshare_pd_import(dev, mr_blob, mr_len, &pd2), RSHARE_E_BLOB_KIND);
	CHECK_OK(rshare_pd_free(pd2));

	/* A PD with live MR handles of this process is busy, both ways. */
	CHECK_ST(rshare_pd_unimport(pd_imp), RSHARE_E_BUSY);
	CHECK_MSG("MR");
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK_OK(rshare_pd_handle(pd, &h2)); /* and untouched */
	CHECK_OK(rshare_mr_unimport(imp));
	CHECK_ST(rshare_mr_unimport(imp), RSHARE_E_STALE);
	CHECK_OK(rshare_pd_unimport(pd_imp));

	/* The device stays open while an MR lives (through its PD). */
	CHECK_ST(rshare_device_close(dev), RSHARE_E_BUSY);

	cross_process(dev, pd, mr, mr_blob, mr_len);
	CHECK_ST(rshare_mr_attrs(mr, NULL, NULL, NULL, NULL, NULL), RSHARE_E_STALE);
	pd = NULL; /* freed by cross_process */
}

/* Dereg in this process: stale handle, later imports NOT_FOUND. */
static void case_dereg_then_not_found(void)
{
	unsigned char mr_blob[RSHARE_BLOB_MAX], other_mem[64];
	rshare_mr *mr, *imp;
	size_t mr_len;

	REQUIRE_OK(rshare_mr_reg(pd, other_mem, sizeof(other_mem), 0, &mr));
	mr_len = export_mr(mr, mr_blob);
	CHECK_OK(rshare_mr_dereg(mr));
	CHECK_ST(rshare_mr_dereg(mr), RSHARE_E_STALE);
	CHECK_ST(rshare_mr_import(pd, mr_blob, mr_len, &imp), RSHARE_E_NOT_FOUND);
}


#define T_PROGRAM_test_mr ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
