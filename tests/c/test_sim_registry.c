/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The per-process table registry finds a table by its memfd's inode, and
 * shmem inode numbers are 32 bits and wrap: another table can meet the
 * inode of one this process holds. Producing that for real takes 2^32
 * memfds, so the test hook sim_test_map_inject (only in the
 * rshare_internal_test build) adds an entry that claims the inode of a real
 * table with another table id, as a table that met it would have. Adopting
 * the real table must then be refused (NODEV, saying why), never served
 * through the other table's entry; contexts already adopted keep working;
 * an entry of the same id is shared as before.
 */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "harness.h"
#include "sim/sim_table.h"

/* The table id of dev, from its header (the creator's own file). */
static uint64_t table_id(int fd)
{
	uint64_t id = 0;

	REQUIRE(pread(fd, &id, sizeof(id), (off_t)offsetof(struct sim_header, table_id)) ==
		(ssize_t)sizeof(id));
	return id;
}

/* Every case: sim0 (its fd), a PD and its blob. */
static unsigned char blob[RSHARE_BLOB_MAX];
static rshare_device *dev;
static rshare_pd *pd;
static size_t len;
static int fd;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);
}

static void teardown(void)
{
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* A second context of the table, made from fd, imports the PD. */
static void adopt_again(void)
{
	rshare_device *again;
	rshare_pd *imp;

	REQUIRE_OK(rshare_device_import(fd, &again));
	CHECK_OK(rshare_pd_import(again, blob, len, &imp));
	CHECK_OK(rshare_pd_unimport(imp));
	CHECK_OK(rshare_device_close(again));
}

/* Without a collision, a second context of the table shares it. */
static void case_no_collision(void)
{
	adopt_again();
}

/* Another table's entry on this table's inode: refused, nothing made; the
 * context adopted before keeps its view; adopted again once it is gone. */
static void case_collision(void)
{
	rshare_device *other;
	struct sim_map *fake;
	rshare_pd *imp;
	int fds_before;

	REQUIRE(sim_test_map_inject(fd, table_id(fd) ^ 0x5a5a5a5a5a5a5a5aull, &fake) ==
		RSHARE_OK);
	fds_before = count_fds();
	other = NULL;
	CHECK_ST(rshare_device_import(fd, &other), RSHARE_E_NODEV);
	CHECK_MSG("another table");
	CHECK_MSG("fd "); /* names the caller's fd (rs_fail_context) */
	CHECK(other == NULL);
	CHECK(count_fds() == fds_before);
	/* The context adopted before the collision still has its own view. */
	CHECK_OK(rshare_pd_import(dev, blob, len, &imp));
	CHECK_OK(rshare_pd_unimport(imp));
	sim_map_put(fake);

	/* The colliding table gone, the table is adopted again. */
	adopt_again();
}

/* An entry of the same id is the same table: shared, not refused. */
static void case_same_id(void)
{
	rshare_device *again;
	struct sim_map *same;

	REQUIRE(sim_test_map_inject(fd, table_id(fd), &same) == RSHARE_OK);
	CHECK_OK(rshare_device_import(fd, &again));
	CHECK_OK(rshare_device_close(again));
	sim_map_put(same);
}

#define T_PROGRAM_test_sim_registry ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
