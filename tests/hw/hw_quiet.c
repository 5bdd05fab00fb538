/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare without usable rdma-core must stay the simulated library it is:
 * sim0 listed (last), opened by default when there is no hardware, an
 * unknown fd refused with a clear status, and not a byte on stderr.
 *
 *   hw_quiet none     RSHARE_LIBIBVERBS/RSHARE_LIBMLX5 point at missing files
 *   hw_quiet system   the system's rdma-core (here: Debian 12's, no RDMA)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdbool.h>

#include "harness.h"

int main(int argc, char **argv)
{
	bool none = argc == 2 && strcmp(argv[1], "none") == 0;
	char name[RSHARE_NAME_MAX], path[] = "/tmp/rshare-hw-quiet-XXXXXX";
	size_t n = 0, hw = 0;
	rshare_device *dev = NULL;
	rshare_pd *pd = NULL;
	int saved, cap, prov = 0, p[2];
	struct stat st;

	if (argc != 2 || (!none && strcmp(argv[1], "system") != 0)) {
		fprintf(stderr, "usage: hw_quiet none|system\n");
		return 2;
	}
	/* Everything the library might print lands in a file we inspect. */
	cap = mkstemp(path);
	REQUIRE(cap >= 0);
	unlink(path);
	saved = dup(2);
	REQUIRE(saved >= 0 && dup2(cap, 2) == 2);

	CHECK_OK(rshare_devices_count(&n));
	for (size_t i = 0; i < n; i++) {
		CHECK_OK(rshare_devices_get(i, name, sizeof(name), NULL, &prov));
		if (prov == RSHARE_PROVIDER_HW)
			hw++;
	}
	CHECK(n >= 1 && hw == n - 1); /* sim0 last, after any hardware */
	CHECK_OK(rshare_devices_get(n - 1, name, sizeof(name), NULL, &prov));
	CHECK(strcmp(name, "sim0") == 0 && prov == RSHARE_PROVIDER_SIM);
	if (none)
		CHECK(n == 1);

	/* No hardware: the default device is sim0, and it works. */
	if (hw == 0) {
		CHECK_OK(rshare_device_open(NULL, &dev));
		CHECK_OK(rshare_device_provider(dev, &prov));
		CHECK(prov == RSHARE_PROVIDER_SIM);
		CHECK_OK(rshare_pd_alloc(dev, &pd));
		CHECK_OK(rshare_pd_free(pd));
		CHECK_OK(rshare_device_close(dev));
		CHECK_ST(rshare_device_open("mlx5_0", &dev), RSHARE_E_NODEV);
	}
	REQUIRE(pipe(p) == 0);
	CHECK_ST(rshare_device_import(p[0], &dev), RSHARE_E_NODEV);
	if (none)
		CHECK_MSG("rdma-core is not loaded");
	close(p[0]);
	close(p[1]);

	fflush(stderr);
	REQUIRE(fstat(cap, &st) == 0);
	dup2(saved, 2);
	close(saved);
	if (st.st_size != 0) {
		char buf[512] = "";
		ssize_t r = pread(cap, buf, sizeof(buf) - 1, 0);
		fprintf(stderr, "stderr was not quiet (%lld bytes): %.*s\n",
			(long long)st.st_size, (int)(r > 0 ? r : 0), buf);
	}
	CHECK(st.st_size == 0);
	close(cap);
	printf("hw_quiet %s: %zu device(s), %d passed, %d failed\n", argv[1], n,
	       t_pass, t_fail);
	return t_fail ? 1 : 0;
}
