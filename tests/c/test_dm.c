/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Device memory on the simulated device, against the 1.1 contract: alloc,
 * length, bounds-checked and overflow-safe read/write (nothing written past
 * the end), export/import, and across real processes (a forked child
 * receives the device fd over a channel, imports the DM, reads what the
 * parent wrote and writes its answer; a free makes later imports
 * NOT_FOUND); since 1.2 device memory mapped (sim0: the same bytes as
 * read/write see, in every handle's mapping; a mapping kept past a free is
 * not given to new device memory). Exits 77 (ctest: skipped) on a provider
 * without DM.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define LEN 4096

static int child(int sock)
{
	unsigned char blob[RSHARE_BLOB_MAX], buf[16];
	rshare_device *dev;
	rshare_dm *dm;
	size_t len;
	uint64_t length;

	if (rshare_channel_recv(sock, &dev, blob, sizeof(blob), &len))
		return 10;
	if (rshare_dm_import(dev, blob, len, &dm) || rshare_dm_length(dm, &length) ||
	    length != LEN)
		return 11;
	if (rshare_dm_read(dm, 100, buf, 16) || memcmp(buf, "from the parent", 16))
		return 12;
	if (rshare_dm_write(dm, LEN - 16, "from the child.", 16))
		return 13;
	if (rshare_dm_unimport(dm) || rshare_device_close(dev))
		return 14;
	return 0;
}

/* rshare_dm_map (1.2): what read/write see, shared between handles. */
static void mapped(rshare_device *dev)
{
	unsigned char blob[RSHARE_BLOB_MAX], got[8];
	rshare_dm *dm, *imp, *next;
	char *p, *q, *again;
	size_t len;
	uint32_t caps;

	REQUIRE_OK(rshare_device_caps(dev, &caps));
	REQUIRE_OK(rshare_dm_alloc(dev, 100, &dm));
	if (!(caps & RSHARE_CAP_DM_MAP)) {
		CHECK_ST(rshare_dm_map(dm, (void **)&p), RSHARE_E_UNSUPPORTED);
		CHECK_OK(rshare_dm_free(dm));
		return;
	}
	REQUIRE_OK(rshare_dm_map(dm, (void **)&p));
	CHECK_OK(rshare_dm_map(dm, (void **)&again));
	CHECK(again == p);
	memcpy(p + 10, "mapped!", 8);
	CHECK_OK(rshare_dm_read(dm, 10, got, 8));
	CHECK(memcmp(got, "mapped!", 8) == 0);
	CHECK_OK(rshare_dm_write(dm, 20, "written", 8));
	CHECK(memcmp(p + 20, "written", 8) == 0);
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_dm_import(dev, blob, len, &imp));
	REQUIRE_OK(rshare_dm_map(imp, (void **)&q));
	CHECK(q != p && memcmp(q + 10, "mapped!", 8) == 0);
	/* Freed while imp still maps it: new device memory gets other granules. */
	CHECK_OK(rshare_dm_free(dm));
	REQUIRE_OK(rshare_dm_alloc(dev, 100, &next));
	CHECK_OK(rshare_dm_write(next, 10, "newer!!", 8));
	CHECK(memcmp(q + 10, "mapped!", 8) == 0); /* the old bytes, untouched */
	CHECK_OK(rshare_dm_unmap(imp));
	CHECK_OK(rshare_dm_unmap(imp)); /* nothing mapped: a no-op */
	CHECK_OK(rshare_dm_unimport(imp));
	CHECK_ST(rshare_dm_map(imp, (void **)&p), RSHARE_E_STALE);
	CHECK_ST(rshare_dm_unmap(imp), RSHARE_E_STALE);
	CHECK_ST(rshare_dm_map(NULL, (void **)&p), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_map(next, NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_dm_free(next));
}

/* Every case: sim0 and LEN bytes of device memory (freed by the case or
 * the teardown), its blob. Without device memory (a provider that lacks
 * it) the refusal is checked and the case reported skipped. */
static rshare_device *dev;
static rshare_dm *dm; /* NULL once freed */
static unsigned char blob[RSHARE_BLOB_MAX];
static size_t len;

static void setup(void)
{
	uint32_t caps;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_caps(dev, &caps));
	if (!(caps & RSHARE_CAP_DM)) {
		CHECK_ST(rshare_dm_alloc(dev, LEN, &dm), RSHARE_E_UNSUPPORTED);
		CHECK_OK(rshare_device_close(dev)); /* nothing was left behind */
		printf("SKIPPED: sim0 lacks RSHARE_CAP_DM (%d checks of the refusal passed)\n",
		       t_pass);
		exit(t_fail ? 1 : 77);
	}
	REQUIRE_OK(rshare_dm_alloc(dev, LEN, &dm));
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));
}

static void teardown(void)
{
	if (dm)
		CHECK_OK(rshare_dm_free(dm));
	CHECK_OK(rshare_device_close(dev));
}

/* Allocation: arguments, a length nobody has, the length and handle. */
static void case_alloc(void)
{
	rshare_dm *other;
	uint64_t length;
	uint32_t h;

	CHECK_ST(rshare_dm_alloc(dev, 0, &other), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_alloc(dev, LEN, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_alloc(dev, UINT64_MAX, &other), RSHARE_E_NOMEM);
	CHECK_OK(rshare_dm_length(dm, &length));
	CHECK(length == LEN);
	CHECK_OK(rshare_dm_handle(dm, &h));
}

/* Bounds: exactly to the end is fine, one past is refused with nothing
 * written; offsets near UINT64_MAX cannot wrap around. */
static void case_bounds(void)
{
	unsigned char buf[64];

	memset(buf, 0xab, sizeof(buf));
	CHECK_OK(rshare_dm_write(dm, LEN - 8, buf, 8));
	CHECK_OK(rshare_dm_write(dm, 0, buf, 0));
	CHECK_OK(rshare_dm_write(dm, LEN, NULL, 0));
	CHECK_ST(rshare_dm_write(dm, LEN - 7, "12345678", 8), RSHARE_E_INVAL);
	CHECK_MSG("past the end");
	CHECK_ST(rshare_dm_write(dm, LEN + 1, buf, 0), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_write(dm, UINT64_MAX, buf, 2), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_write(dm, 8, buf, SIZE_MAX), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_write(dm, 0, NULL, 1), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_read(dm, UINT64_MAX - 3, buf, 8), RSHARE_E_INVAL);
	CHECK_ST(rshare_dm_read(dm, 0, NULL, 1), RSHARE_E_INVAL);
	memset(buf, 0, sizeof(buf));
	CHECK_OK(rshare_dm_read(dm, LEN - 8, buf, 8));
	CHECK(buf[0] == 0xab && buf[7] == 0xab); /* the refused write changed nothing */
}

/* Export and import in this process: the same memory (the export, made in
 * setup, is a 52-byte blob with the length). */
static void case_export_import(void)
{
	unsigned char buf[64];
	rshare_dm *imp;
	uint64_t v;

	CHECK(len == 52);
	CHECK_OK(rshare_blob_field(blob, len, RSHARE_FIELD_LENGTH, &v));
	CHECK(v == LEN);
	REQUIRE_OK(rshare_dm_import(dev, blob, len, &imp));
	CHECK_OK(rshare_dm_write(imp, 100, "from the parent", 16));
	CHECK_OK(rshare_dm_read(dm, 100, buf, 16));
	CHECK(memcmp(buf, "from the parent", 16) == 0);
	CHECK_OK(rshare_dm_unimport(imp));
	CHECK_ST(rshare_dm_read(imp, 0, buf, 1), RSHARE_E_STALE);
	CHECK_ST(rshare_device_close(dev), RSHARE_E_BUSY);
}

/* Another process reads what this one wrote, and answers. */
static void case_another_process(void)
{
	unsigned char buf[64];
	int sv[2], status;
	pid_t pid;

	CHECK_OK(rshare_dm_write(dm, 100, "from the parent", 16)); /* what the child reads */
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1]));
	}
	close(sv[1]);
	CHECK_OK(rshare_channel_send(sv[0], dev, blob, len));
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(sv[0]);
	CHECK_OK(rshare_dm_read(dm, LEN - 16, buf, 16));
	CHECK(memcmp(buf, "from the child.", 16) == 0);
}

/* Free: later imports are NOT_FOUND. */
static void case_free_then_not_found(void)
{
	rshare_dm *imp;

	CHECK_OK(rshare_dm_free(dm));
	CHECK_ST(rshare_dm_free(dm), RSHARE_E_STALE);
	CHECK_ST(rshare_dm_import(dev, blob, len, &imp), RSHARE_E_NOT_FOUND);
	dm = NULL;
}

/* rshare_dm_map (1.2): what read/write see, shared between handles. */
static void case_mapped(void)
{
	mapped(dev);
}

/* Mappings of sim0's memfd in this process (/proc/self/maps). */
static int sim_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "rshare-sim0") != NULL;
	fclose(f);
	return n;
}

struct map_racer {
	rshare_dm *dm;
	pthread_barrier_t *go;
	int rounds, bad;
};

static void *map_racer(void *arg)
{
	struct map_racer *r = arg;
	void *p;

	pthread_barrier_wait(r->go);
	for (int i = 0; i < r->rounds; i++) {
		if (rshare_dm_map(r->dm, &p) != RSHARE_OK || !p)
			r->bad++;
		if (i % 2 && rshare_dm_unmap(r->dm) != RSHARE_OK)
			r->bad++;
	}
	return NULL;
}

/* Threads map and unmap one DM at once (a fresh one each round, so its
 * first mapping races too): one mapping at a time, each unmapped whole
 * (no mapping or granule left behind), no data race (TSan). */
static void case_map_race(void)
{
	struct map_racer r[3];
	pthread_barrier_t go;
	pthread_t th[3];
	rshare_dm *fresh;
	uint32_t caps;
	int before;

	REQUIRE_OK(rshare_device_caps(dev, &caps));
	if (!(caps & RSHARE_CAP_DM_MAP)) {
		printf("SKIPPED: sim0 does not map device memory here\n");
		exit(t_fail ? 1 : 77);
	}
	before = sim_mappings();
	for (int round = 0; round < 50; round++) {
		REQUIRE_OK(rshare_dm_alloc(dev, LEN, &fresh));
		pthread_barrier_init(&go, NULL, 3);
		for (int i = 0; i < 3; i++) {
			r[i] = (struct map_racer){ fresh, &go, 40, 0 };
			REQUIRE(pthread_create(&th[i], NULL, map_racer, &r[i]) == 0);
		}
		for (int i = 0; i < 3; i++) {
			pthread_join(th[i], NULL);
			CHECK(r[i].bad == 0);
		}
		pthread_barrier_destroy(&go);
		CHECK(sim_mappings() <= before + 1);
		CHECK_OK(rshare_dm_free(fresh)); /* unmaps what is left */
		CHECK(sim_mappings() == before);
	}
}

#define T_PROGRAM_test_dm ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
