/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare selftest [--device NAME]: the operator's first check on a host
 * with RDMA hardware. On one hardware device it checks, with real objects,
 * that rshare's identity and reuse checks hold there (docs/hardware.md,
 * "Checking levels") and that the capabilities the device reports are the
 * ones that work, and prints a verdict per item. The VAR page is mapped,
 * never read or written (on a NIC it is a doorbell). Exit status: 0 every
 * item passed or was skipped with its reason, 1 an item failed, 77 there
 * is no RDMA device here (what ctest calls skipped), 2 usage.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "doctor.h"

static int run_selftest(int argc, char **argv);

const struct cli_command cli_selftest = {
	.name = "selftest",
	.args = "[--device NAME]",
	.summary = "check rshare's identity and reuse checks on an RDMA device (exit 0 "
		   "passed, 1 an item failed, 77 no RDMA device)",
	.options = "  -d, --device=NAME   the hardware device (default: the first one)\n",
	.run = run_selftest,
};

static const struct option selftest_opts[] = {
	{ "device", required_argument, NULL, 'd' },
	CLI_OPT_HELP,
	{ 0 },
};

static int failures;

static void verdict(const char *v, const char *item, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void verdict(const char *v, const char *item, const char *fmt, ...)
{
	va_list ap;

	printf("%-4s  %-16s ", v, item);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (strcmp(v, "FAIL") == 0)
		failures++;
}

/* Status s is want, else a FAIL line naming both and the last error. */
static bool expect(const char *item, int s, int want, const char *what)
{
	if (s == want)
		return true;
	verdict("FAIL", item, "%s: %s, expected %s (%s)", what, rshare_status_name(s),
		rshare_status_name(want), s ? rshare_last_error() : "no error");
	return false;
}

/* The context as another process gets it: over a channel, with its ledger. */
static int received(rshare_device *dev, rshare_device **out)
{
	size_t len;
	int sv[2], s;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return RSHARE_E_IO;
	s = rshare_channel_send(sv[0], dev, NULL, 0);
	if (!s)
		s = rshare_channel_recv(sv[1], out, NULL, 0, &len);
	close(sv[0]);
	close(sv[1]);
	return s;
}

static void check_identity(const char *name, rshare_device *a, rshare_device *b)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *c = NULL;
	rshare_pd *pd, *copy = NULL;
	uint64_t table = 0;
	size_t len;
	int s;

	if ((s = rshare_pd_alloc(a, &pd)) || (s = rshare_pd_export(pd, blob, sizeof(blob), &len)) ||
	    (s = rshare_blob_field(blob, len, RSHARE_FIELD_TABLE, &table))) {
		expect("identity", s, RSHARE_OK, "a PD and its blob");
		return;
	}
	if (table == 0)
		verdict("FAIL", "identity", "the PD blob names no object table (0)");
	else if (expect("identity", rshare_pd_import(b, blob, len, &copy), RSHARE_OK,
			"import into a context received over a channel") &&
		 rshare_pd_unimport(copy) == RSHARE_OK &&
		 expect("identity", rshare_device_open(name, &c), RSHARE_OK, "a second open") &&
		 expect("identity", rshare_pd_import(c, blob, len, &copy),
			RSHARE_E_DEVICE_MISMATCH, "import into a separately opened context"))
		verdict("PASS", "identity", "table 0x%016" PRIx64 "; another context of the "
			"device refuses its blobs", table);
	if (c)
		rshare_device_close(c);
	rshare_pd_free(pd);
}

static void check_pd_reuse(rshare_device *a, rshare_device *b)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_pd *pd, *again, *copy = NULL;
	uint32_t h1 = 0, h2 = 0;
	size_t len;
	int s;

	if ((s = rshare_pd_alloc(a, &pd)) || (s = rshare_pd_export(pd, blob, sizeof(blob), &len)) ||
	    (s = rshare_pd_handle(pd, &h1)) || (s = rshare_pd_free(pd)) ||
	    (s = rshare_pd_alloc(a, &again))) {
		expect("PD reuse", s, RSHARE_OK, "alloc, export, free, alloc");
		return;
	}
	rshare_pd_handle(again, &h2);
	if (expect("PD reuse", rshare_pd_import(b, blob, len, &copy), RSHARE_E_NOT_FOUND,
		   "importing the freed PD's blob"))
		verdict("PASS", "PD reuse", "freed PD's blob refused (handle %" PRIu32 " %s)", h1,
			h1 == h2 ? "reused by the next PD" : "not reused");
	else if (copy)
		rshare_pd_unimport(copy);
	rshare_pd_free(again);
}

static void check_mr_reuse(rshare_device *a, rshare_device *b)
{
	unsigned char blob[RSHARE_BLOB_MAX], pblob[RSHARE_BLOB_MAX];
	rshare_pd *pd, *bpd = NULL;
	rshare_mr *m1, *m2, *copy = NULL;
	uint32_t k1 = 0, k2 = 0;
	size_t len, plen;
	void *buf = calloc(1, 8192);
	int s;

	if (!buf || (s = rshare_pd_alloc(a, &pd))) {
		verdict("FAIL", "MR reuse", "no memory or no PD");
		free(buf);
		return;
	}
	if ((s = rshare_mr_reg(pd, buf, 8192, RSHARE_ACCESS_LOCAL_WRITE, &m1)) ||
	    (s = rshare_mr_export(m1, blob, sizeof(blob), &len)) ||
	    (s = rshare_mr_attrs(m1, NULL, NULL, &k1, NULL, NULL)) || (s = rshare_mr_dereg(m1)) ||
	    (s = rshare_mr_reg(pd, buf, 8192, RSHARE_ACCESS_LOCAL_WRITE, &m2))) {
		expect("MR reuse", s, RSHARE_OK, "register, export, deregister, register");
		rshare_pd_free(pd);
		free(buf);
		return;
	}
	rshare_mr_attrs(m2, NULL, NULL, &k2, NULL, NULL);
	if ((s = rshare_pd_export(pd, pblob, sizeof(pblob), &plen)) ||
	    (s = rshare_pd_import(b, pblob, plen, &bpd)))
		expect("MR reuse", s, RSHARE_OK, "importing the PD");
	else if (expect("MR reuse", rshare_mr_import(bpd, blob, len, &copy), RSHARE_E_NOT_FOUND,
			"importing the deregistered MR's blob"))
		verdict("PASS", "MR reuse", "deregistered MR's blob refused (keys %s)",
			k1 == k2 ? "handed back by the mkey cache" : "changed");
	if (copy)
		rshare_mr_unimport(copy);
	if (bpd)
		rshare_pd_unimport(bpd);
	rshare_mr_dereg(m2);
	rshare_pd_free(pd);
	free(buf);
}

static void check_dm(rshare_device *a, rshare_device *b, uint32_t caps)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_dm *dm, *again, *copy = NULL;
	size_t len;
	int s = rshare_dm_alloc(a, 256, &dm);

	if (!(caps & RSHARE_CAP_DM)) {
		if (expect("DM reuse", s, RSHARE_E_UNSUPPORTED, "device memory without RSHARE_CAP_DM"))
			verdict("SKIP", "DM reuse", "no device memory, as reported (%s)",
				rshare_last_error());
		else if (!s)
			rshare_dm_free(dm);
		return;
	}
	if (s || (s = rshare_dm_export(dm, blob, sizeof(blob), &len)) ||
	    (s = rshare_dm_free(dm)) || (s = rshare_dm_alloc(a, 256, &again))) {
		expect("DM reuse", s, RSHARE_OK, "alloc, export, free, alloc");
		return;
	}
	if (expect("DM reuse", rshare_dm_import(b, blob, len, &copy), RSHARE_E_NOT_FOUND,
		   "importing the freed DM's blob"))
		verdict("PASS", "DM reuse", "freed device memory's blob refused");
	else if (copy)
		rshare_dm_unimport(copy);
	rshare_dm_free(again);
}

static void check_var(rshare_device *a, rshare_device *b, uint32_t caps)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_var *var, *again, *copy = NULL;
	uint64_t off1 = 0, off2 = 1;
	void *page = NULL;
	size_t len;
	int s = rshare_var_alloc(a, 0, &var);

	if (!(caps & RSHARE_CAP_VAR)) {
		if (!s) {
			rshare_var_free(var);
			verdict("PASS", "VAR", "VARs allocate but cannot be shared, as reported");
		} else if (expect("VAR", s, RSHARE_E_UNSUPPORTED, "a VAR without RSHARE_CAP_VAR")) {
			verdict("SKIP", "VAR", "no VARs here (%s)", rshare_last_error());
		}
		return;
	}
	/* Mapped, never read or written: on a NIC it is the doorbell page. */
	if (s || (s = rshare_var_export(var, blob, sizeof(blob), &len)) ||
	    (s = rshare_var_map(var, &page)) || (s = rshare_var_import(b, blob, len, &copy)) ||
	    (s = rshare_var_unimport(copy)) || (s = rshare_var_free(var))) {
		expect("VAR", s, RSHARE_OK, "alloc, export, map, import, unimport, free");
		return;
	}
	/* The next VAR takes the freed one's mmap offset (mlx5 hands them
	 * out lowest-free per context): the old blob must still be refused. */
	copy = NULL;
	if ((s = rshare_var_alloc(a, 0, &again))) {
		expect("VAR", s, RSHARE_OK, "a second VAR after the free");
		return;
	}
	rshare_blob_field(blob, len, RSHARE_FIELD_MMAP_OFF, &off1);
	rshare_var_attrs(again, NULL, NULL, &off2);
	if (expect("VAR", rshare_var_import(b, blob, len, &copy), RSHARE_E_NOT_FOUND,
		   "importing the freed VAR's blob"))
		verdict("PASS", "VAR", "shared and mapped (page untouched); the freed VAR's "
			"blob refused (its mmap offset %s)",
			off1 == off2 ? "reused by the next VAR" : "not reused");
	else if (copy)
		rshare_var_unimport(copy);
	rshare_var_free(again);
}

/* The first hardware device, or name checked to be one; false if none. */
static bool pick(const char *want, char *name)
{
	size_t n = 0;

	if (rshare_devices_count(&n))
		return false;
	for (size_t i = 0; i < n; i++) {
		int provider = 0;

		if (rshare_devices_get(i, name, RSHARE_NAME_MAX, NULL, &provider) == RSHARE_OK &&
		    provider == RSHARE_PROVIDER_HW && (!want || strcmp(want, name) == 0))
			return true;
	}
	return false;
}

static int run_selftest(int argc, char **argv)
{
	const char *want = NULL;
	char name[RSHARE_NAME_MAX];
	rshare_device *a, *b = NULL;
	struct doctor d = { 0 };
	uint32_t caps = 0;
	int c, s;

	while ((c = cli_getopt(&cli_selftest, argc, argv, "d:h", selftest_opts)) != -1)
		if (c == 'd')
			want = optarg;
	if (optind < argc)
		cli_usage_error(&cli_selftest, "unexpected argument '%s'", argv[optind]);
	if (!pick(want, name)) {
		printf("selftest: no RDMA device%s%s%s here (rdma-core lists none%s); nothing "
		       "to check\n", want ? " named \"" : "", want ? want : "", want ? "\"" : "",
		       want ? " by that name, or it is not a hardware device" : "");
		return 77;
	}
	if ((s = rshare_device_open(name, &a)) || (s = rshare_device_caps(a, &caps)))
		return cli_fail("opening the device", s);
	doctor_probe(&d);
	printf("selftest of %s: rdma-core %s; checking level %s\n", name,
	       d.verbs_path[0] ? d.verbs_path : "?", doctor_level(RSHARE_PROVIDER_HW, caps));
	s = received(a, &b);
	if (!(caps & RSHARE_CAP_PD)) {
		if (expect("capabilities", s, RSHARE_E_UNSUPPORTED,
			   "receiving a context of a device without RSHARE_CAP_PD"))
			verdict("PASS", "capabilities", "no sharing, as reported: %s",
				doctor_why_off(&d, RSHARE_PROVIDER_HW, caps, RSHARE_CAP_PD));
		if (!s)
			rshare_device_close(b);
		rshare_device_close(a);
		return failures ? 1 : 0;
	}
	if (!expect("capabilities", s, RSHARE_OK, "receiving the context over a channel")) {
		rshare_device_close(a);
		return 1;
	}
	{
		uint32_t bcaps = 0;

		rshare_device_caps(b, &bcaps);
		if (caps & RSHARE_CAP_LEDGER && !(bcaps & RSHARE_CAP_LEDGER))
			verdict("FAIL", "capabilities", "the ledger did not travel with the context");
		else
			verdict("PASS", "capabilities", "sharing works where reported; the "
				"received context's level is %s",
				doctor_level(RSHARE_PROVIDER_HW, bcaps));
	}
	check_identity(name, a, b);
	check_pd_reuse(a, b);
	if (caps & RSHARE_CAP_MR)
		check_mr_reuse(a, b);
	else
		verdict("SKIP", "MR reuse", "%s",
			doctor_why_off(&d, RSHARE_PROVIDER_HW, caps, RSHARE_CAP_MR));
	check_dm(a, b, caps);
	check_var(a, b, caps);
	rshare_device_close(b);
	if ((s = rshare_device_close(a)))
		return cli_fail("closing the device", s);
	printf("selftest: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
