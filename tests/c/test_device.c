/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Devices: listing, open, import of good and bad fds, accessors, close. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* Listing: sim0 last, the (buf, cap) name convention. */
static void case_listing(void)
{
	char name[RSHARE_NAME_MAX];
	uint64_t guid;
	size_t n;
	int provider;

	REQUIRE_OK(rshare_devices_count(&n));
	CHECK(n >= 1);
	CHECK_OK(rshare_devices_get(n - 1, name, sizeof(name), &guid, &provider));
	CHECK(strcmp(name, "sim0") == 0);
	CHECK(provider == RSHARE_PROVIDER_SIM);
	CHECK(guid != 0);
	CHECK_OK(rshare_devices_get(n - 1, NULL, 0, NULL, NULL));
	CHECK_ST(rshare_devices_get(n - 1, name, 4, NULL, NULL), RSHARE_E_NOSPACE);
	CHECK_ST(rshare_devices_get(n - 1, NULL, 8, NULL, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_devices_get(n, name, sizeof(name), NULL, NULL), RSHARE_E_NOT_FOUND);
	CHECK_ST(rshare_devices_get(SIZE_MAX, name, sizeof(name), NULL, NULL),
		 RSHARE_E_NOT_FOUND);
}

/* RSHARE_SIM=0 hides sim0 from the list and from open. */
static void case_sim_hidden(void)
{
	rshare_device *dev;
	size_t n, len;

	REQUIRE_OK(rshare_devices_count(&n));
	setenv("RSHARE_SIM", "0", 1);
	CHECK_OK(rshare_devices_count(&len));
	CHECK(len == n - 1);
	CHECK_ST(rshare_device_open("sim0", &dev), RSHARE_E_NODEV);
	CHECK(strstr(rshare_last_error(), "RSHARE_SIM=0") != NULL);
	if (len == 0)
		CHECK_ST(rshare_device_open(NULL, &dev), RSHARE_E_NODEV);
	unsetenv("RSHARE_SIM");
	CHECK_OK(rshare_devices_count(&len));
	CHECK(len == n);
}

/* Open: by name and by default. */
static void case_open(void)
{
	rshare_device *dev, *dev2;
	size_t n;

	REQUIRE_OK(rshare_devices_count(&n));
	CHECK_ST(rshare_device_open("sim0", NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_device_open("no-such-device", &dev), RSHARE_E_NODEV);
	CHECK(strstr(rshare_last_error(), "no-such-device") != NULL);
	REQUIRE_OK(rshare_device_open(n == 1 ? NULL : "sim0", &dev));
	REQUIRE_OK(rshare_device_open("", &dev2));
	CHECK_OK(rshare_device_close(dev2));
	CHECK_OK(rshare_device_close(dev));
}

/* The accessor and import cases: sim0 open, its fd. */
static rshare_device *dev;
static int fd;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
}

static void teardown(void)
{
	if (dev)
		CHECK_OK(rshare_device_close(dev));
}

/* Accessors and the (buf, cap, len) convention. */
static void case_accessors(void)
{
	char name[RSHARE_NAME_MAX];
	uint64_t guid, guid2;
	size_t n, len;
	int provider, fd2;

	REQUIRE_OK(rshare_devices_count(&n));
	REQUIRE_OK(rshare_devices_get(n - 1, name, sizeof(name), &guid, NULL));
	CHECK_ST(rshare_device_name(dev, NULL, 0, &len), RSHARE_E_NOSPACE);
	CHECK(len == 4);
	CHECK_ST(rshare_device_name(dev, name, 4, &len), RSHARE_E_NOSPACE);
	CHECK(len == 4);
	CHECK_OK(rshare_device_name(dev, name, 5, &len));
	CHECK(len == 4 && strcmp(name, "sim0") == 0);
	CHECK_ST(rshare_device_name(dev, name, sizeof(name), NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_device_guid(dev, &guid2));
	CHECK(guid2 == guid);
	CHECK_OK(rshare_device_provider(dev, &provider));
	CHECK(provider == RSHARE_PROVIDER_SIM);
	CHECK_OK(rshare_device_fd(dev, &fd2));
	CHECK(fd2 == fd && fd >= 0 && fcntl(fd, F_GETFD) >= 0);
	CHECK_ST(rshare_device_fd(dev, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_device_guid(dev, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_device_provider(dev, NULL), RSHARE_E_INVAL);
}

/* Import shares the table: a PD of one is importable in the other. The
 * caller keeps its fd: closing the import leaves dev's fd open. Closing
 * with a live PD is BUSY; closed, the device's fd goes with it. */
static void case_import_shares_table(void)
{
	char name[RSHARE_NAME_MAX];
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *imp;
	rshare_pd *pd, *pd2;
	size_t len, blen;

	REQUIRE_OK(rshare_device_import(fd, &imp));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &blen));
	CHECK_OK(rshare_pd_import(imp, blob, blen, &pd2));
	/* BUSY while a PD made through the handle is live; then closable. */
	CHECK_ST(rshare_device_close(imp), RSHARE_E_BUSY);
	CHECK(strstr(rshare_last_error(), "still live") != NULL);
	CHECK_OK(rshare_device_name(imp, name, sizeof(name), &len)); /* still open */
	CHECK_OK(rshare_pd_unimport(pd2));
	CHECK_OK(rshare_device_close(imp));
	CHECK(fcntl(fd, F_GETFD) >= 0);

	CHECK_ST(rshare_device_close(dev), RSHARE_E_BUSY);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
	CHECK_ST(rshare_device_close(dev), RSHARE_E_STALE);
	CHECK(fcntl(fd, F_GETFD) < 0); /* the device's fd went with it */
	dev = NULL;
}

/* Bad fds: refused with a clear status, and no fd leaks. */
static void case_bad_fds(void)
{
	rshare_device *imp;
	int fds_before, p[2], sv[2];

	fds_before = count_fds();
	CHECK_ST(rshare_device_import(-1, &imp), RSHARE_E_INVAL);
	CHECK_ST(rshare_device_import(fd, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_device_import(987, &imp), RSHARE_E_INVAL);
	REQUIRE_OK(pipe(p) == 0 ? 0 : -14);
	CHECK_ST(rshare_device_import(p[0], &imp), RSHARE_E_NODEV);
	CHECK(strstr(rshare_last_error(), "rshare_device_import") != NULL);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	CHECK_ST(rshare_device_import(sv[0], &imp), RSHARE_E_NODEV);
	{
		int devnull = open("/dev/null", O_RDWR);
		CHECK_ST(rshare_device_import(devnull, &imp), RSHARE_E_NODEV);
		close(devnull);
	}
	{
		/* A regular file, even one that starts like a table, is refused:
		 * it is not sealed against shrinking. */
		char path[] = "/tmp/rshare-test-XXXXXX";
		int tf = mkstemp(path);
		unsigned char hdr[64] = { 0 };
		pread(fd, hdr, sizeof(hdr), 0);
		CHECK(write(tf, hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr));
		CHECK_ST(rshare_device_import(tf, &imp), RSHARE_E_NODEV);
		close(tf);
		unlink(path);
	}
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	CHECK(count_fds() == fds_before);
}

#define T_PROGRAM_test_device ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
