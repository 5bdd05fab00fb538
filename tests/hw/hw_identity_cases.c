/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Identity on the hardware path: a reused PD handle, a blob of another
 * context on the same device and a stale VAR blob are refused; rdma-core's
 * assert in _mlx5dv_free_var and its double free in mlx5dv_var_unimport are
 * out of reach.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "hw_suite.h"

void case_pd_handle_reused(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_pd *pd1, *pdc, *pd2, *wrong = NULL;
	uint32_t h1, h2;
	size_t len;

	REQUIRE_OK(rshare_pd_alloc(a, &pd1));
	REQUIRE_OK(rshare_pd_export(pd1, blob, sizeof(blob), &len));
	CHECK_OK(rshare_pd_handle(pd1, &h1));
	CHECK_OK(rshare_pd_free(pd1));
	/* Another context of the device takes the freed PD number; the next
	 * PD of a's table takes the freed handle, with another number. */
	REQUIRE_OK(rshare_pd_alloc(c, &pdc));
	REQUIRE_OK(rshare_pd_alloc(a, &pd2));
	CHECK_OK(rshare_pd_handle(pd2, &h2));
	CHECK(h2 == h1);
	CHECK_ST(rshare_pd_import(b, blob, len, &wrong), RSHARE_E_NOT_FOUND);
	CHECK_MSG("handle reused");
	CHECK(wrong == NULL);
	CHECK_ST(rshare_pd_import(a, blob, len, &wrong), RSHARE_E_NOT_FOUND);
	CHECK(wrong == NULL);
	CHECK_OK(rshare_pd_free(pd2));
	CHECK_OK(rshare_pd_free(pdc));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

void case_table_identity(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX], blob_b[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_pd *pd, *pdb, *copy = NULL, *wrong = NULL;
	size_t len, len_b;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	/* Same device, another context: its handles mean other objects. */
	CHECK_ST(rshare_pd_import(c, blob, len, &wrong), RSHARE_E_DEVICE_MISMATCH);
	CHECK_MSG("object table");
	CHECK(wrong == NULL);
	/* A context imported from a's fd shares a's table, both ways. */
	CHECK_OK(rshare_pd_import(b, blob, len, &copy));
	REQUIRE_OK(rshare_pd_alloc(b, &pdb));
	REQUIRE_OK(rshare_pd_export(pdb, blob_b, sizeof(blob_b), &len_b));
	CHECK(memcmp(blob + 24, blob_b + 24, 8) == 0); /* one table id */
	CHECK_OK(rshare_pd_import(a, blob_b, len_b, &wrong));
	CHECK_OK(rshare_pd_unimport(wrong));
	CHECK_ST(rshare_pd_import(c, blob_b, len_b, &wrong), RSHARE_E_DEVICE_MISMATCH);
	CHECK_OK(rshare_pd_free(pdb));
	CHECK_OK(rshare_pd_unimport(copy));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

void case_var_stale(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	unsigned char blob2[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a), *d;
	rshare_var *va, *vn, *copy = NULL, *again = NULL;
	uint32_t page;
	uint64_t off;
	size_t len, len2;

	/* Freed by another context: the owner's free is refused (upstream
	 * would abort the process in _mlx5dv_free_var), and so is the blob. */
	REQUIRE_OK(rshare_var_alloc(a, 0, &va));
	REQUIRE_OK(rshare_var_export(va, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_var_import(b, blob, len, &copy));
	/* d is imported before the free: a context imported after it would
	 * take the freed mmap entry for its own UAR (mlx5 makes one per
	 * import, lowest free), and the probe would map that. Only the
	 * ledger sees such reuse (case var_ledger_reuse). */
	d = hw_import_dev(a);
	CHECK_OK(rshare_var_free(copy));
	CHECK_ST(rshare_var_free(va), RSHARE_E_NOT_FOUND);
	CHECK_MSG("unimport it instead");
	CHECK_ST(rshare_var_import(b, blob, len, &again), RSHARE_E_NOT_FOUND);
	CHECK_MSG("seen it freed");
	/* A context that never saw it asks the kernel: the offset is gone. */
	CHECK_ST(rshare_var_import(d, blob, len, &again), RSHARE_E_NOT_FOUND);
	CHECK_MSG("VAR was freed");
	CHECK(again == NULL);
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_var_unimport(va));

	/* Freed here: this context knows the blob is stale, even once a new
	 * VAR has the same offset and page; the new VAR's blob is fine. b
	 * has no ledger (imported from a bare fd): what it refuses here it
	 * refuses from its own record of the VARs it has seen. */
	REQUIRE_OK(rshare_var_alloc(b, 0, &va));
	REQUIRE_OK(rshare_var_export(va, blob, sizeof(blob), &len));
	CHECK_OK(rshare_var_free(va));
	CHECK_ST(rshare_var_import(b, blob, len, &again), RSHARE_E_NOT_FOUND);
	CHECK_MSG("seen it freed");
	CHECK(again == NULL);
	REQUIRE_OK(rshare_var_alloc(a, 0, &vn));
	REQUIRE_OK(rshare_var_export(vn, blob2, sizeof(blob2), &len2));
	CHECK_OK(rshare_var_attrs(vn, &page, NULL, &off));
	CHECK(memcmp(blob + 40, blob2 + 40, 16) == 0); /* same page, length, offset */
	CHECK_ST(rshare_var_import(b, blob, len, &again), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_var_import(b, blob2, len2, &again));
	/* Holding the new one, the old blob is refused for that reason too. */
	CHECK_ST(rshare_var_import(b, blob, len, &copy), RSHARE_E_NOT_FOUND);
	CHECK_MSG("holds another VAR there");
	CHECK_OK(rshare_var_unimport(again));
	CHECK_OK(rshare_var_free(vn));

	/* A removed device: freeing would abort in rdma-core; refused. */
	REQUIRE_OK(rshare_var_alloc(a, 0, &va));
	hw_hook("STANDIN_DISASSOCIATED", "1");
	CHECK_ST(rshare_var_free(va), RSHARE_E_IO);
	CHECK_MSG("removed or reset");
	hw_hook("STANDIN_DISASSOCIATED", NULL);
	CHECK_OK(rshare_var_free(va));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

struct race {
	rshare_var *var;
	pthread_barrier_t *go;
	int status;
};

static void *unimport_racer(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(r->go);
	r->status = rshare_var_unimport(r->var);
	return NULL;
}

void case_var_unimport_once(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_var *va, *copy;
	pthread_barrier_t go;
	pthread_t th[2];
	struct race r[2];
	size_t len;

	REQUIRE_OK(rshare_var_alloc(a, 0, &va));
	REQUIRE_OK(rshare_var_export(va, blob, sizeof(blob), &len));
	/* In turn: the second is refused, not a second mlx5dv_var_unimport. */
	REQUIRE_OK(rshare_var_import(b, blob, len, &copy));
	CHECK_OK(rshare_var_unimport(copy));
	CHECK_ST(rshare_var_unimport(copy), RSHARE_E_STALE);
	CHECK_ST(rshare_var_free(copy), RSHARE_E_STALE);
	/* At once, from two threads: exactly one gets through. */
	for (int round = 0; round < 20; round++) {
		REQUIRE_OK(rshare_var_import(b, blob, len, &copy));
		pthread_barrier_init(&go, NULL, 2);
		for (int i = 0; i < 2; i++) {
			r[i] = (struct race){ copy, &go, -1 };
			REQUIRE(pthread_create(&th[i], NULL, unimport_racer, &r[i]) == 0);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&go);
		CHECK((r[0].status == RSHARE_OK) + (r[1].status == RSHARE_OK) == 1);
		CHECK(r[0].status == RSHARE_E_STALE || r[1].status == RSHARE_E_STALE);
	}
	CHECK_OK(rshare_var_free(va));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

static uint64_t field(const unsigned char *blob, size_t len, int f)
{
	uint64_t v = ~0ull;

	CHECK_OK(rshare_blob_field(blob, len, f, &v));
	return v;
}

/* What the blobs carry, as abi/BLOB-FORMAT.md says: on mlx5 a table id and
 * PD numbers; on another provider nothing to check them by (0). */
void case_identity_fields(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX], blob_b[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(STANDIN_OTHER);
	rshare_pd *pd, *pd2, *pdc;
	size_t len, len_b;
	uint64_t table;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_alloc(a, &pd2));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_pd_export(pd2, blob_b, sizeof(blob_b), &len_b));
	table = field(blob, len, RSHARE_FIELD_TABLE);
	CHECK(table >> 56 == 0x48);
	CHECK(field(blob_b, len_b, RSHARE_FIELD_TABLE) == table);
	/* PD numbers: nonzero, one per PD, the sentinel's among them. */
	CHECK(field(blob, len, RSHARE_FIELD_SERIAL) != 0);
	CHECK(field(blob, len, RSHARE_FIELD_SERIAL) != field(blob_b, len_b, RSHARE_FIELD_SERIAL));
	CHECK(field(blob, len, RSHARE_FIELD_SERIAL) - 1 != (table & 0xffffff));

	REQUIRE_OK(rshare_pd_alloc(c, &pdc));
	REQUIRE_OK(rshare_pd_export(pdc, blob, sizeof(blob), &len));
	CHECK(field(blob, len, RSHARE_FIELD_TABLE) == 0);
	CHECK(field(blob, len, RSHARE_FIELD_SERIAL) == 0);
	CHECK_OK(rshare_pd_free(pdc));
	CHECK_OK(rshare_pd_free(pd2));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

struct free_race {
	rshare_var *var;
	pthread_barrier_t *go;
	int status;
};

static void *free_racer(void *arg)
{
	struct free_race *r = arg;

	pthread_barrier_wait(r->go);
	r->status = rshare_var_free(r->var);
	return NULL;
}

/* Two handles on one VAR (the allocated one and a copy in another context)
 * freed at once: one destroys it, the other is refused; neither reaches
 * _mlx5dv_free_var for a VAR already gone (the stand-in would abort). */
void case_var_free_race(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	struct free_race r[2];
	pthread_barrier_t go;
	pthread_t th[2];
	size_t len;

	for (int round = 0; round < 100; round++) {
		rshare_var *va, *copy;

		REQUIRE_OK(rshare_var_alloc(a, 0, &va));
		REQUIRE_OK(rshare_var_export(va, blob, sizeof(blob), &len));
		REQUIRE_OK(rshare_var_import(b, blob, len, &copy));
		pthread_barrier_init(&go, NULL, 2);
		r[0] = (struct free_race){ va, &go, -1 };
		r[1] = (struct free_race){ copy, &go, -1 };
		for (int i = 0; i < 2; i++)
			REQUIRE(pthread_create(&th[i], NULL, free_racer, &r[i]) == 0);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&go);
		CHECK((r[0].status == RSHARE_OK) + (r[1].status == RSHARE_OK) == 1);
		CHECK(r[0].status == RSHARE_E_NOT_FOUND || r[1].status == RSHARE_E_NOT_FOUND);
		/* The refused handle stays live until unimported. */
		for (int i = 0; i < 2; i++)
			if (r[i].status != RSHARE_OK)
				CHECK_OK(rshare_var_unimport(r[i].var));
	}
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* A forked child shares the parent's VAR mappings (the kernel counts the
 * copies); unimporting an inherited VAR unmaps its copy only. A VAR freed
 * while the parent still maps it keeps its mmap entry, so the next VAR
 * gets another offset, not the page the parent can still touch. */
void case_var_map_fork(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_var *va, *copy, *next;
	uint64_t off_old = 0, off_new = 0;
	void *page = NULL;
	size_t len;
	int pid, st = 0;

	REQUIRE_OK(rshare_var_alloc(a, 0, &va));
	REQUIRE_OK(rshare_var_attrs(va, NULL, NULL, &off_old));
	REQUIRE_OK(rshare_var_export(va, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_var_import(b, blob, len, &copy));
	REQUIRE_OK(rshare_var_map(copy, &page));
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) /* the inherited copy goes here, its mapping unmapped */
		_exit(rshare_var_unimport(copy) != RSHARE_OK);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_OK(rshare_var_free(va));
	REQUIRE_OK(rshare_var_alloc(a, 0, &next));
	REQUIRE_OK(rshare_var_attrs(next, NULL, NULL, &off_new));
	CHECK(off_new != off_old); /* the old entry lives while copy maps it */
	CHECK_OK(rshare_var_free(next));
	CHECK_OK(rshare_var_unimport(copy));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}
