/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Kernel scale: 100,000 live objects in one table, handles handed out
 * lowest-free first as the kernel's IDR does, memory that follows what is
 * live (the memfd is sparse), and one mapping of a table per process however
 * many contexts of it the process holds (none for a process that only
 * imports a few blobs), and nothing of it left after the last close.
 */
#include <stdio.h>
#include <sys/stat.h>

#include "sim_peer.h"

#define LIVE 100000

/* Mappings of this process whose path names the sim memfd. */
static int sim_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	REQUIRE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "rshare-sim0"))
			n++;
	fclose(f);
	return n;
}

/* Fds of this process open on a sim memfd (contexts, and the description
 * a process opens of its own to mark the VAR pages it maps). */
static int sim_fds(void)
{
	char path[64], target[256];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strstr(target, "rshare-sim0") != NULL;
		}
	}
	return n;
}

/* Once every context is closed this process holds nothing of the table
 * (no fd, no mapping), so it is gone when the other processes close
 * theirs: the kernel frees a memfd with its last reference. */
static void case_nothing_left(void)
{
	rshare_device *dev;
	rshare_var *var;
	void *a;

	CHECK(sim_fds() == 0 && sim_mappings() == 0);
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	CHECK_OK(rshare_var_alloc(dev, 0, &var));
	CHECK_OK(rshare_var_map(var, &a)); /* reopens the memfd for its page locks */
	CHECK(sim_fds() == 2 && sim_mappings() == 2);
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(dev));
	CHECK(sim_fds() == 0 && sim_mappings() == 0);
}

static long long file_bytes(int fd)
{
	struct stat st;

	REQUIRE(fstat(fd, &st) == 0);
	return (long long)st.st_blocks * 512;
}

/* A process that receives a context and imports a few blobs reads the
 * objects without mapping the table; after a few lookups it maps it, once;
 * closing the context drops the mapping. */
static void case_import_without_mapping(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_pd *pd;
	size_t len;
	int sv[2], before, i;
	pid_t pid;
	char c;

	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		if (rshare_device_open("sim0", &dev) || rshare_pd_alloc(dev, &pd) ||
		    rshare_pd_export(pd, blob, sizeof(blob), &len) ||
		    rshare_channel_send(sv[1], dev, blob, len))
			_exit(1);
		_exit(read(sv[1], &c, 1) == 1 ? 0 : 1); /* keep the PD until told */
	}
	close(sv[1]);
	before = sim_mappings();
	REQUIRE_OK(rshare_channel_recv(sv[0], &dev, blob, sizeof(blob), &len));
	for (i = 0; i < 8; i++) {
		CHECK_OK(rshare_pd_import(dev, blob, len, &pd));
		CHECK_OK(rshare_pd_unimport(pd));
	}
	CHECK(sim_mappings() == before); /* read with pread, not mapped */
	for (i = 0; i < 8; i++) {
		CHECK_OK(rshare_pd_import(dev, blob, len, &pd));
		CHECK_OK(rshare_pd_unimport(pd));
	}
	CHECK(sim_mappings() == before + 1); /* many lookups: mapped, once */
	CHECK_OK(rshare_device_close(dev));
	CHECK(sim_mappings() == before);
	REQUIRE(write(sv[0], "x", 1) == 1);
	waitpid(pid, NULL, 0);
	close(sv[0]);
}

/* 100,000 PDs and every VAR page live in one table: handles lowest-free
 * first, a sparse file that holds about what is live. */
static void case_live_objects(void)
{
	static rshare_pd *pds[LIVE];
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_var *vars[SIM_VAR_PAGES];
	rshare_device *dev;
	rshare_pd *pd, *imp;
	uint32_t h;
	size_t len;
	int fd, i, ok = 1;
	long long empty;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	empty = file_bytes(fd);
	CHECK(empty < 256 * 1024); /* sparse: nothing live, little used */

	/* 100,000 PDs and every VAR page, live together; handles 0, 1, 2 ... */
	for (i = 0; i < LIVE && ok; i++) {
		ok = rshare_pd_alloc(dev, &pds[i]) == RSHARE_OK &&
		     rshare_pd_handle(pds[i], &h) == RSHARE_OK && h == (uint32_t)i;
	}
	CHECK(ok && i == LIVE);
	for (i = 0; i < (int)SIM_VAR_PAGES; i++)
		CHECK_OK(rshare_var_alloc(dev, 0, &vars[i]));
	/* 64-byte objects: the file holds about what is live. */
	CHECK(file_bytes(fd) < empty + (long long)LIVE * 64 + 2 * 1024 * 1024);
	CHECK(file_bytes(fd) > (long long)LIVE * 64 / 2);

	/* Every one of them is there, for another context too. */
	len = export_pd(pds[LIVE - 1], blob);
	CHECK_OK(rshare_pd_import(dev, blob, len, &imp));
	CHECK_OK(rshare_pd_unimport(imp));

	/* Lowest free first: holes are refilled in order. */
	CHECK_OK(rshare_pd_free(pds[70000]));
	CHECK_OK(rshare_pd_free(pds[5000]));
	CHECK_OK(rshare_pd_free(pds[64 * 64 + 1]));
	CHECK_OK(rshare_pd_alloc(dev, &pds[64 * 64 + 1]));
	CHECK_OK(rshare_pd_handle(pds[64 * 64 + 1], &h));
	CHECK(h == 64 * 64 + 1);
	CHECK_OK(rshare_pd_alloc(dev, &pds[5000]));
	CHECK_OK(rshare_pd_handle(pds[5000], &h));
	CHECK(h == 5000);
	CHECK_OK(rshare_pd_alloc(dev, &pds[70000]));
	CHECK_OK(rshare_pd_handle(pds[70000], &h));
	CHECK(h == 70000);
	/* The churn pattern (free the newest, allocate again) at the top. */
	for (i = 0; i < 1000; i++) {
		CHECK_OK(rshare_pd_alloc(dev, &pd));
		CHECK_OK(rshare_pd_handle(pd, &h));
		CHECK(h == LIVE + SIM_VAR_PAGES);
		CHECK_OK(rshare_pd_free(pd));
	}
	for (i = 0; i < (int)SIM_VAR_PAGES; i++)
		CHECK_OK(rshare_var_free(vars[i]));
	for (i = 0; i < LIVE; i++)
		if (rshare_pd_free(pds[i]) != RSHARE_OK)
			break;
	CHECK(i == LIVE);
	CHECK_OK(rshare_device_close(dev));
}

/* One mapping per table per process: 1,000 contexts of it cost no more
 * mappings, and the last close drops the one there is. */
static void case_one_mapping(void)
{
	static rshare_device *ctxs[1000];
	rshare_device *dev;
	rshare_pd *pd;
	int fd, i;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	CHECK(sim_mappings() == 1);
	for (i = 0; i < 1000; i++)
		CHECK_OK(rshare_device_import(fd, &ctxs[i]));
	CHECK_OK(rshare_pd_alloc(ctxs[999], &pd));
	CHECK_OK(rshare_pd_free(pd));
	CHECK(sim_mappings() == 1);
	for (i = 0; i < 1000; i++)
		CHECK_OK(rshare_device_close(ctxs[i]));
	CHECK(sim_mappings() == 1);
	CHECK_OK(rshare_device_close(dev));
	CHECK(sim_mappings() == 0);
}

#define T_PROGRAM_test_sim_scale ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(NULL, NULL)
