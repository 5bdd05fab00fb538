/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* mlx5 VARs through the hardware provider. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "hw_suite.h"

void case_var_local(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char json[512], want[64];
	rshare_device *a = NULL, *b = NULL;
	rshare_var *var, *copy = NULL, *tlp;
	uint32_t page = 0, length = 0, page2 = 0, length2 = 0;
	uint64_t off = 0, off2 = 1;
	void *pa = NULL, *pb = NULL;
	size_t len = 0, jlen;
	int kind = 0, fd;

	REQUIRE_OK(rshare_device_open(t->name, &a));
	REQUIRE_OK(rshare_device_fd(a, &fd));
	REQUIRE_OK(rshare_device_import(fd, &b));
	REQUIRE_OK(rshare_var_alloc(a, 0, &var));
	CHECK_OK(rshare_var_attrs(var, &page, &length, &off));
	CHECK(length > 0);
	/* The first VAR page of a fresh table, at the lowest free mmap
	 * offset: mlx5's range starts at offset page 0x900, and the UARs
	 * of a's open and b's import hold its entries 0 and 1. */
	if (t->standin)
		CHECK(page == STANDIN_VAR_PAGE_ID0 && length == 4096 &&
		      off == (0x900 + 2) * 4096ull);

	CHECK_OK(rshare_var_export(var, blob, sizeof(blob), &len));
	CHECK_OK(rshare_blob_kind(blob, len, &kind));
	CHECK(kind == RSHARE_KIND_VAR);
	CHECK_OK(rshare_blob_describe(blob, len, json, sizeof(json), &jlen));
	CHECK(strstr(json, "\"provider\":\"hw\"") != NULL);
	snprintf(want, sizeof(want), "\"page_id\":%u", page);
	CHECK(strstr(json, want) != NULL);
	if (t->standin) /* upstream's record travels whole */
		CHECK(strstr(json, "\"private_len\":24") != NULL);

	CHECK_OK(rshare_var_import(b, blob, len, &copy));
	CHECK_OK(rshare_var_attrs(copy, &page2, &length2, &off2));
	CHECK(page2 == page && length2 == length && off2 == off);
	CHECK_OK(rshare_var_map(var, &pa));
	CHECK_OK(rshare_var_map(copy, &pb));
	CHECK(pa && pb && pa != pb);
	/* Only the stand-in's pages are plain memory: a real VAR page is
	 * device doorbell space, not written by a test. */
	if (t->standin && pa && pb) {
		strcpy(pa, "written through context a");
		CHECK(strcmp(pb, "written through context a") == 0);
	}

	if (t->standin) {
		CHECK_OK(rshare_var_alloc(a, RSHARE_VAR_FLAG_TLP, &tlp));
		CHECK_OK(rshare_var_free(tlp));
	}
	CHECK_OK(rshare_var_unimport(copy));
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

void case_var_not_mlx5(const struct hw_target *t)
{
	rshare_device *c = NULL;
	rshare_var *var = NULL;

	(void)t;
	REQUIRE_OK(rshare_device_open(STANDIN_OTHER, &c));
	CHECK_ST(rshare_var_alloc(c, 0, &var), RSHARE_E_UNSUPPORTED);
	CHECK_MSG("not an mlx5 device");
	CHECK(var == NULL);
	CHECK_OK(rshare_device_close(c));
}

void case_var_limit(const struct hw_target *t)
{
	rshare_var *vars[STANDIN_VAR_PAGES + 1];
	rshare_device *a = NULL;
	int n = 0, s = RSHARE_OK;

	REQUIRE_OK(rshare_device_open(t->name, &a));
	while (n <= STANDIN_VAR_PAGES && (s = rshare_var_alloc(a, 0, &vars[n])) == RSHARE_OK)
		n++;
	CHECK(n == STANDIN_VAR_PAGES);
	CHECK_ST(s, RSHARE_E_NOMEM);
	CHECK(rshare_last_errno() == ENOSPC); /* alloc_var_entry: no free page */
	CHECK_MSG("mlx5dv_alloc_var");
	CHECK_MSG("no free entry");
	for (int i = 0; i < n; i++)
		CHECK_OK(rshare_var_free(vars[i]));
	CHECK_OK(rshare_device_close(a));
}

/* A VAR blob made by a child whose libmlx5 has the export API. */
static bool blob_from_newer_child(const struct hw_target *t, rshare_device *dev,
				  unsigned char *blob, size_t *len)
{
	const char *lib = getenv("RSHARE_TEST_MLX5_63");
	char env[4096], text[RSHARE_TEXT_MAX + 2] = "";
	ssize_t got = 0, r;
	int sock, pid;

	if (!lib)
		return false;
	snprintf(env, sizeof(env), "RSHARE_LIBMLX5=%s", lib);
	pid = spawn_child(t, "child-var63", env, &sock);
	CHECK_OK(rshare_channel_send(sock, dev, NULL, 0));
	while ((size_t)got < sizeof(text) - 1 &&
	       (r = read(sock, text + got, sizeof(text) - 1 - (size_t)got)) > 0)
		got += r;
	close(sock);
	CHECK(reap_child(pid));
	text[strcspn(text, "\n")] = '\0';
	return rshare_blob_from_text(text, blob, RSHARE_BLOB_MAX, len) == RSHARE_OK;
}

void case_var_without_export(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = NULL;
	rshare_var *var, *copy = NULL;
	size_t len = 0;

	REQUIRE_OK(rshare_device_open(t->name, &a));
	/* Allocation is older than sharing: it works. */
	REQUIRE_OK(rshare_var_alloc(a, 0, &var));
	CHECK_ST(rshare_var_export(var, blob, sizeof(blob), &len), RSHARE_E_UNSUPPORTED);
	CHECK_MSG("mlx5dv_var_export");
	CHECK_MSG("rdma-core 63 or newer");

	/* A blob that a newer rdma-core made is refused just as clearly. */
	if (blob_from_newer_child(t, a, blob, &len)) {
		CHECK_ST(rshare_var_import(a, blob, len, &copy), RSHARE_E_UNSUPPORTED);
		CHECK_MSG("rdma-core 63 or newer");
		CHECK(copy == NULL);
	} else if (t->standin) {
		CHECK(!"the rdma-core 63 child gave no VAR blob");
	}
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(a));
}
