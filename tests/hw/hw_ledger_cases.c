/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Hardware truth on the stand-in mlx5 device (issue 17): the table is named
 * (never 0, never handle 0), reuse of a handle freed through rshare is
 * refused at the ledger level and what the bare level cannot see is shown
 * as such, the ledger travels with the device over a channel and a fork,
 * a forged or foreign ledger is dropped, and a provider without import
 * shares nothing. docs/hardware.md's table of what each checking level
 * catches is these cases.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "hw_suite.h"

rshare_device *hw_channel_dev(rshare_device *from)
{
	rshare_device *dev = NULL;
	size_t len = 0;
	int sv[2];

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	REQUIRE_OK(rshare_channel_send(sv[0], from, NULL, 0));
	REQUIRE_OK(rshare_channel_recv(sv[1], &dev, NULL, 0, &len));
	close(sv[0]);
	close(sv[1]);
	return dev;
}

static uint32_t caps_of(rshare_device *dev)
{
	uint32_t caps = 0;

	CHECK_OK(rshare_device_caps(dev, &caps));
	return caps;
}

/* The blob's table field (bytes 24..31, little-endian). */
static uint64_t table_of(const unsigned char *blob)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | blob[24 + i];
	return v;
}

void case_table_never_zero(const struct hw_target *t)
{
	unsigned char pblob[RSHARE_BLOB_MAX], mblob[RSHARE_BLOB_MAX], dblob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_channel_dev(a), *bare = hw_import_dev(a);
	rshare_pd *pd, *pdb;
	rshare_mr *mr;
	rshare_dm *dm;
	uint32_t h;
	size_t plen, mlen, dlen, len;
	static char buf[4096];
	unsigned char other[RSHARE_BLOB_MAX];

	/* mlx5 took the lowest handle for its UAR at open: the first user
	 * PD (rshare's sentinel aside) is never handle 0. */
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK(h != 0);
	REQUIRE_OK(rshare_pd_export(pd, pblob, sizeof(pblob), &plen));
	REQUIRE_OK(rshare_mr_reg(pd, buf, sizeof(buf), RSHARE_ACCESS_LOCAL_WRITE, &mr));
	REQUIRE_OK(rshare_mr_export(mr, mblob, sizeof(mblob), &mlen));
	REQUIRE_OK(rshare_dm_alloc(a, 256, &dm));
	REQUIRE_OK(rshare_dm_export(dm, dblob, sizeof(dblob), &dlen));
	/* Every blob names the table, and every context of it agrees,
	 * with the ledger (channel) or without (bare fd: the probe). */
	CHECK(table_of(pblob) != 0 && table_of(pblob) >> 56 == 0x48);
	CHECK(table_of(mblob) == table_of(pblob) && table_of(dblob) == table_of(pblob));
	REQUIRE_OK(rshare_pd_alloc(b, &pdb));
	REQUIRE_OK(rshare_pd_export(pdb, other, sizeof(other), &len));
	CHECK(table_of(other) == table_of(pblob));
	CHECK_OK(rshare_pd_free(pdb));
	REQUIRE_OK(rshare_pd_alloc(bare, &pdb));
	REQUIRE_OK(rshare_pd_export(pdb, other, sizeof(other), &len));
	CHECK(table_of(other) == table_of(pblob));
	CHECK_OK(rshare_pd_free(pdb));
	CHECK_OK(rshare_mr_dereg(mr));
	CHECK_OK(rshare_dm_free(dm));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(bare));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

void case_other_context_mismatch(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(t->name);
	rshare_device *cbare = hw_import_dev(c);
	rshare_dm *dm, *wrong = NULL;
	rshare_var *var, *vwrong = NULL;
	size_t len;

	/* DM of another context of the same device: another table, whether
	 * the importer has the ledger or not. */
	REQUIRE_OK(rshare_dm_alloc(a, 256, &dm));
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));
	CHECK_ST(rshare_dm_import(c, blob, len, &wrong), RSHARE_E_DEVICE_MISMATCH);
	CHECK_MSG("object table");
	CHECK_ST(rshare_dm_import(cbare, blob, len, &wrong), RSHARE_E_DEVICE_MISMATCH);
	CHECK(wrong == NULL);
	CHECK_OK(rshare_dm_free(dm));
	/* VARs too, where they can be shared: their blob names a's table. */
	if (t->var_sharing) {
		REQUIRE_OK(rshare_var_alloc(a, 0, &var));
		REQUIRE_OK(rshare_var_export(var, blob, sizeof(blob), &len));
		CHECK(table_of(blob) != 0 && table_of(blob) >> 56 == 0x48);
		CHECK_ST(rshare_var_import(c, blob, len, &vwrong), RSHARE_E_DEVICE_MISMATCH);
		CHECK_ST(rshare_var_import(cbare, blob, len, &vwrong), RSHARE_E_DEVICE_MISMATCH);
		CHECK(vwrong == NULL);
		CHECK_OK(rshare_var_free(var));
	}
	CHECK_OK(rshare_device_close(cbare));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

/* One object freed through rshare and its handle (and everything the kernel
 * reports) reused: the ledger level refuses the old blob, the bare level
 * cannot tell (docs/hardware.md, "Checking levels"). */
void case_reuse_levels(const struct hw_target *t)
{
	unsigned char pblob[RSHARE_BLOB_MAX], dblob[RSHARE_BLOB_MAX], mblob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_channel_dev(a), *bare = hw_import_dev(a);
	rshare_pd *pd1, *pd2, *keep, *wrong = NULL, *bpd;
	rshare_dm *dm1, *dm2, *dwrong = NULL;
	rshare_mr *m1, *m2, *mwrong = NULL;
	uint32_t h1, h2;
	size_t plen, dlen, mlen;
	static char buf[8192];

	CHECK(caps_of(a) & RSHARE_CAP_LEDGER);
	CHECK(caps_of(b) & RSHARE_CAP_LEDGER);
	CHECK(!(caps_of(bare) & RSHARE_CAP_LEDGER));

	/* PD: free, allocate again with nothing in between: same handle and
	 * same PD number (both lowest-free). */
	REQUIRE_OK(rshare_pd_alloc(a, &pd1));
	REQUIRE_OK(rshare_pd_export(pd1, pblob, sizeof(pblob), &plen));
	CHECK_OK(rshare_pd_handle(pd1, &h1));
	CHECK_OK(rshare_pd_free(pd1));
	REQUIRE_OK(rshare_pd_alloc(a, &pd2));
	CHECK_OK(rshare_pd_handle(pd2, &h2));
	CHECK(h2 == h1);
	CHECK_ST(rshare_pd_import(a, pblob, plen, &wrong), RSHARE_E_NOT_FOUND);
	CHECK_MSG("freed since this blob was made");
	CHECK_ST(rshare_pd_import(b, pblob, plen, &wrong), RSHARE_E_NOT_FOUND);
	CHECK(wrong == NULL);
	CHECK_OK(rshare_pd_import(bare, pblob, plen, &wrong)); /* the bare level's gap */
	CHECK_OK(rshare_pd_unimport(wrong));

	/* DM: the same, and struct ibv_dm shows nothing to compare. */
	REQUIRE_OK(rshare_dm_alloc(a, 512, &dm1));
	REQUIRE_OK(rshare_dm_export(dm1, dblob, sizeof(dblob), &dlen));
	CHECK_OK(rshare_dm_free(dm1));
	REQUIRE_OK(rshare_dm_alloc(a, 512, &dm2));
	CHECK_ST(rshare_dm_import(b, dblob, dlen, &dwrong), RSHARE_E_NOT_FOUND);
	CHECK_MSG("DM handle");
	CHECK(dwrong == NULL);
	CHECK_OK(rshare_dm_import(bare, dblob, dlen, &dwrong)); /* gap */
	CHECK_OK(rshare_dm_unimport(dwrong));

	/* MR: mlx5's mkey cache hands the same keys back. */
	REQUIRE_OK(rshare_pd_alloc(a, &keep));
	REQUIRE_OK(rshare_mr_reg(keep, buf, sizeof(buf), RSHARE_ACCESS_LOCAL_WRITE, &m1));
	REQUIRE_OK(rshare_mr_export(m1, mblob, sizeof(mblob), &mlen));
	CHECK_OK(rshare_mr_dereg(m1));
	REQUIRE_OK(rshare_mr_reg(keep, buf, sizeof(buf), RSHARE_ACCESS_LOCAL_WRITE, &m2));
	{
		unsigned char pk[RSHARE_BLOB_MAX];
		size_t pklen;

		REQUIRE_OK(rshare_pd_export(keep, pk, sizeof(pk), &pklen));
		REQUIRE_OK(rshare_pd_import(b, pk, pklen, &bpd));
		CHECK_ST(rshare_mr_import(bpd, mblob, mlen, &mwrong), RSHARE_E_NOT_FOUND);
		CHECK(mwrong == NULL);
		CHECK_OK(rshare_pd_unimport(bpd));
		REQUIRE_OK(rshare_pd_import(bare, pk, pklen, &bpd));
		CHECK_OK(rshare_mr_import(bpd, mblob, mlen, &mwrong)); /* gap */
		CHECK_OK(rshare_mr_unimport(mwrong));
		CHECK_OK(rshare_pd_unimport(bpd));
	}
	/* A blob made after the reuse imports everywhere. */
	REQUIRE_OK(rshare_pd_export(pd2, pblob, sizeof(pblob), &plen));
	CHECK_OK(rshare_pd_import(b, pblob, plen, &wrong));
	CHECK_OK(rshare_pd_unimport(wrong));

	CHECK_OK(rshare_mr_dereg(m2));
	CHECK_OK(rshare_pd_free(keep));
	CHECK_OK(rshare_dm_free(dm2));
	CHECK_OK(rshare_pd_free(pd2));
	CHECK_OK(rshare_device_close(bare));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* A forked child receives the device over a channel (with its ledger):
 * it imports the live PD and refuses the freed one's blob. */
void case_fork_channel(const struct hw_target *t)
{
	unsigned char live[RSHARE_BLOB_MAX], stale[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *gone, *pd;
	size_t llen, slen;
	int sv[2], pid, st = 0;

	REQUIRE_OK(rshare_pd_alloc(a, &gone));
	REQUIRE_OK(rshare_pd_export(gone, stale, sizeof(stale), &slen));
	CHECK_OK(rshare_pd_free(gone));
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, live, sizeof(live), &llen));
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_device *d = NULL;
		rshare_pd *got = NULL;
		size_t len = 0;
		uint32_t caps = 0;
		int bad = 0;

		close(sv[0]);
		bad |= rshare_channel_recv(sv[1], &d, NULL, 0, &len) != RSHARE_OK;
		bad |= rshare_device_caps(d, &caps) != RSHARE_OK || !(caps & RSHARE_CAP_LEDGER);
		bad |= rshare_pd_import(d, live, llen, &got) != RSHARE_OK;
		bad |= rshare_pd_unimport(got) != RSHARE_OK;
		bad |= rshare_pd_import(d, stale, slen, &got) != RSHARE_E_NOT_FOUND;
		bad |= rshare_device_close(d) != RSHARE_OK;
		_exit(bad);
	}
	close(sv[1]);
	CHECK_OK(rshare_channel_send(sv[0], a, NULL, 0));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(sv[0]);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}

/* Fork a child that receives a's device over a channel (with its ledger)
 * and returns fn's verdict (0: as expected) as its exit status; true if
 * it did. */
static bool in_child(rshare_device *a, int (*fn)(rshare_device *d, const void *arg),
		     const void *arg)
{
	int sv[2], pid, st = 0;

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_device *d = NULL;
		uint32_t caps = 0;
		size_t len = 0;
		int bad;

		close(sv[0]);
		if (rshare_channel_recv(sv[1], &d, NULL, 0, &len) != RSHARE_OK ||
		    rshare_device_caps(d, &caps) != RSHARE_OK || !(caps & RSHARE_CAP_LEDGER))
			_exit(100);
		bad = fn(d, arg);
		bad |= rshare_device_close(d) != RSHARE_OK;
		_exit(bad);
	}
	close(sv[1]);
	CHECK_OK(rshare_channel_send(sv[0], a, NULL, 0));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(sv[0]);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

struct var_blob {
	unsigned char b[RSHARE_BLOB_MAX];
	size_t len;
	uint64_t off;
};

static void var_blob_of(rshare_var *v, struct var_blob *out)
{
	REQUIRE_OK(rshare_var_export(v, out->b, sizeof(out->b), &out->len));
	REQUIRE_OK(rshare_var_attrs(v, NULL, NULL, &out->off));
}

/* The child that frees: imports the VAR and frees it through rshare. */
static int import_and_free(rshare_device *d, const void *arg)
{
	const struct var_blob *vb = arg;
	rshare_var *v = NULL;

	if (rshare_var_import(d, vb->b, vb->len, &v) != RSHARE_OK)
		return 1;
	return rshare_var_free(v) != RSHARE_OK;
}

/* The importing child: blobs [0] and [1] are stale, [2] and [3] live. */
static int stale_refused(rshare_device *d, const void *arg)
{
	const struct var_blob *vb = arg;
	rshare_var *v = NULL;
	int bad = 0;

	for (int i = 0; i < 2; i++) {
		bad |= rshare_var_import(d, vb[i].b, vb[i].len, &v) != RSHARE_E_NOT_FOUND;
		bad |= v != NULL || !strstr(rshare_last_error(), "freed since this blob was made");
	}
	for (int i = 2; i < 4; i++) {
		bad |= rshare_var_import(d, vb[i].b, vb[i].len, &v) != RSHARE_OK;
		bad |= v == NULL || rshare_var_unimport(v) != RSHARE_OK;
		v = NULL;
	}
	return bad;
}

/* VARs at the ledger level: after free + alloc hands the same mmap offset
 * (and page) back, the old VAR's blob is refused in another process that
 * holds the ledger, whether the free happened in the blob's maker or in a
 * third process; the bare level cannot tell (docs/hardware.md). */
void case_var_ledger_reuse(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *bare, *c;
	struct var_blob vb[4]; /* stale: freed here, freed elsewhere; live: their successors */
	rshare_var *v1, *v2, *v3, *v3c, *v4, *wrong = NULL;

	/* Freed by its maker, the same offset handed to the next VAR. */
	REQUIRE_OK(rshare_var_alloc(a, 0, &v1));
	var_blob_of(v1, &vb[0]);
	CHECK(vb[0].b[7] & 1); /* the blob carries its ledger serial */
	CHECK_OK(rshare_var_free(v1));
	REQUIRE_OK(rshare_var_alloc(a, 0, &v2));
	var_blob_of(v2, &vb[2]);
	CHECK(vb[2].off == vb[0].off);
	CHECK_ST(rshare_var_import(a, vb[0].b, vb[0].len, &wrong), RSHARE_E_NOT_FOUND);
	CHECK_MSG("freed since this blob was made");
	CHECK(wrong == NULL);

	/* Freed by another process that imported it; this process still
	 * holds its handle (and c, a context received over a channel, an
	 * imported one), and the next VAR takes the offset. */
	c = hw_channel_dev(a);
	REQUIRE_OK(rshare_var_alloc(a, 0, &v3));
	var_blob_of(v3, &vb[1]);
	REQUIRE_OK(rshare_var_import(c, vb[1].b, vb[1].len, &v3c));
	CHECK(in_child(a, import_and_free, &vb[1]));
	REQUIRE_OK(rshare_var_alloc(a, 0, &v4));
	var_blob_of(v4, &vb[3]);
	CHECK(vb[3].off == vb[1].off);
	/* c saw neither the free nor v4, and v4 took v3's offset (and, the
	 * handle being lowest-free too, its kernel handle): freeing c's
	 * handle would destroy v4. The ledger refuses; v4 lives on. */
	CHECK_ST(rshare_var_free(v3c), RSHARE_E_NOT_FOUND);
	CHECK_MSG("freed by another process since this handle got it");
	CHECK_OK(rshare_var_unimport(v3c));
	CHECK_OK(rshare_device_close(c));

	/* A third process, which saw none of it, refuses both stale blobs
	 * and imports both live ones. */
	CHECK(in_child(a, stale_refused, vb));

	/* The bare level's gap: the offset maps (to the new VAR), and a
	 * context that has seen nothing there cannot tell. */
	bare = hw_import_dev(a);
	CHECK_OK(rshare_var_import(bare, vb[1].b, vb[1].len, &wrong));
	CHECK_OK(rshare_var_unimport(wrong));
	CHECK_OK(rshare_device_close(bare));

	CHECK_OK(rshare_var_unimport(v3)); /* freed elsewhere: let go locally */
	CHECK_OK(rshare_var_free(v4));
	CHECK_OK(rshare_var_free(v2));
	CHECK_OK(rshare_device_close(a));
}

/* Two processes free the same PD at once and both destroys fail (an MR of a
 * third keeps it busy): each free moves the serial on and back. Neither may
 * leave the serial moved for a PD that lives on, or every holder's free and
 * every blob of it would be refused as "freed elsewhere" from then on. */
struct free_racer {
	rshare_pd *pd;
	pthread_barrier_t *go;
	int rounds, ok, busy, not_found, other;
};

static void *free_racer(void *arg)
{
	struct free_racer *r = arg;

	pthread_barrier_wait(r->go);
	for (int i = 0; i < r->rounds; i++) {
		int st = rshare_pd_free(r->pd);

		if (st == RSHARE_OK)
			r->ok++;
		else if (st == RSHARE_E_BUSY)
			r->busy++;
		else if (st == RSHARE_E_NOT_FOUND)
			r->not_found++;
		else
			r->other++;
		if (st == RSHARE_OK)
			break;
	}
	return NULL;
}

void case_ledger_free_race(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *b = hw_channel_dev(a), *c = hw_channel_dev(a);
	unsigned char blob[RSHARE_BLOB_MAX];
	static char buf[4096];
	rshare_pd *pd, *copy, *busy, *again;
	struct free_racer r[2];
	pthread_barrier_t go;
	pthread_t th[2];
	rshare_mr *mr;
	size_t len;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_pd_import(b, blob, len, &copy));
	REQUIRE_OK(rshare_pd_import(c, blob, len, &busy));
	REQUIRE_OK(rshare_mr_reg(busy, buf, sizeof(buf), RSHARE_ACCESS_LOCAL_WRITE, &mr));
	pthread_barrier_init(&go, NULL, 2);
	r[0] = (struct free_racer){ .pd = pd, .go = &go, .rounds = 20000 };
	r[1] = (struct free_racer){ .pd = copy, .go = &go, .rounds = 20000 };
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&th[i], NULL, free_racer, &r[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	/* Every destroy failed (the MR); a free that met the other's in
	 * flight was refused (a fast loop may meet it every time), but the
	 * refusals did not outlive the frees. */
	for (int i = 0; i < 2; i++)
		CHECK(r[i].ok == 0 && r[i].other == 0);
	CHECK(r[0].busy + r[1].busy > 0);
	if (r[0].not_found + r[1].not_found)
		printf("# %d + %d frees met the other's in flight\n", r[0].not_found,
		       r[1].not_found);
	CHECK_OK(rshare_mr_dereg(mr));
	/* The PD lives and its serial is the one every holder has. */
	CHECK_OK(rshare_pd_import(a, blob, len, &again));
	CHECK_OK(rshare_pd_unimport(again));
	CHECK_OK(rshare_pd_free(copy));
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_NOT_FOUND); /* freed through b */
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_pd_unimport(busy));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* An import checks the blob's ledger serial, then asks the kernel for the
 * handle (VAR: maps the offset). A free of the object and a new one at its
 * handle (offset) in between must not hand the importer the new object: the
 * stand-in's STANDIN_IMPORT_PAUSE holds the import between the two while
 * this thread frees and re-makes. */
struct paused_import {
	rshare_pd *pd;      /* an MR into pd, or else */
	rshare_device *dev; /* a VAR into dev */
	const unsigned char *blob;
	size_t len;
	int status;
	char msg[256]; /* the importing thread's last error */
};

static void *paused_import(void *arg)
{
	struct paused_import *p = arg;
	rshare_mr *mr = NULL;
	rshare_var *var = NULL;

	p->status = p->pd ? rshare_mr_import(p->pd, p->blob, p->len, &mr)
			  : rshare_var_import(p->dev, p->blob, p->len, &var);
	snprintf(p->msg, sizeof(p->msg), "%s", rshare_last_error());
	if (mr)
		CHECK_OK(rshare_mr_unimport(mr));
	if (var)
		CHECK_OK(rshare_var_unimport(var));
	return NULL;
}

/* Start p's import and return once it is held before its kernel query. */
static pthread_t pause_import(struct paused_import *p, int pipes[2][2])
{
	char hook[32], c;
	pthread_t th;

	REQUIRE(pipe(pipes[0]) == 0 && pipe(pipes[1]) == 0);
	snprintf(hook, sizeof(hook), "%d,%d", pipes[0][1], pipes[1][0]);
	hw_hook("STANDIN_IMPORT_PAUSE", hook);
	REQUIRE(pthread_create(&th, NULL, paused_import, p) == 0);
	{ /* an import that never reaches its kernel query fails here, not by timeout */
		struct pollfd pf = { .fd = pipes[0][0], .events = POLLIN };

		REQUIRE(poll(&pf, 1, 10000) == 1);
	}
	REQUIRE(read(pipes[0][0], &c, 1) == 1);
	hw_hook("STANDIN_IMPORT_PAUSE", NULL); /* one import only */
	return th;
}

static void resume_import(pthread_t th, int pipes[2][2])
{
	REQUIRE(write(pipes[1][1], "", 1) == 1);
	pthread_join(th, NULL);
	for (int i = 0; i < 4; i++)
		close(pipes[i / 2][i % 2]);
}

void case_ledger_import_race(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *b = hw_channel_dev(a);
	unsigned char blob[RSHARE_BLOB_MAX];
	static char buf[4096];
	struct paused_import p;
	uint32_t h_old, h_new;
	rshare_pd *pd, *pdb;
	rshare_mr *mr;
	int pipes[2][2];
	pthread_t th;
	size_t len;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_pd_import(b, blob, len, &pdb));
	REQUIRE_OK(rshare_mr_reg(pd, buf, sizeof(buf), RSHARE_ACCESS_LOCAL_WRITE, &mr));
	REQUIRE_OK(rshare_mr_handle(mr, &h_old));
	REQUIRE_OK(rshare_mr_export(mr, blob, sizeof(blob), &len));
	p = (struct paused_import){ .pd = pdb, .blob = blob, .len = len };
	th = pause_import(&p, pipes);
	/* The MR goes; a new one gets its handle and (the mkey cache) keys. */
	CHECK_OK(rshare_mr_dereg(mr));
	REQUIRE_OK(rshare_mr_reg(pd, buf, sizeof(buf), RSHARE_ACCESS_LOCAL_WRITE, &mr));
	REQUIRE_OK(rshare_mr_handle(mr, &h_new));
	REQUIRE(h_new == h_old);
	resume_import(th, pipes);
	CHECK_ST(p.status, RSHARE_E_NOT_FOUND);
	CHECK(strstr(p.msg, "freed while the blob was being imported"));
	{ /* the refused import left nothing behind: the new MR imports */
		rshare_mr *got;

		REQUIRE_OK(rshare_mr_export(mr, blob, sizeof(blob), &len));
		CHECK_OK(rshare_mr_import(pdb, blob, len, &got));
		CHECK_OK(rshare_mr_unimport(got));
	}
	CHECK_OK(rshare_mr_dereg(mr));
	CHECK_OK(rshare_pd_unimport(pdb));
	CHECK_OK(rshare_pd_free(pd));

	if (t->var_sharing) {
		struct var_blob old, now;
		rshare_var *v, *got;

		REQUIRE_OK(rshare_var_alloc(a, 0, &v));
		var_blob_of(v, &old);
		p = (struct paused_import){ .dev = b, .blob = old.b, .len = old.len };
		th = pause_import(&p, pipes);
		/* The VAR goes; the next takes its mmap offset. */
		CHECK_OK(rshare_var_free(v));
		REQUIRE_OK(rshare_var_alloc(a, 0, &v));
		var_blob_of(v, &now);
		REQUIRE(now.off == old.off);
		resume_import(th, pipes);
		CHECK_ST(p.status, RSHARE_E_NOT_FOUND);
		CHECK_OK(rshare_var_import(b, now.b, now.len, &got));
		CHECK_OK(rshare_var_unimport(got));
		CHECK_OK(rshare_var_free(v));
	}
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* A forked child that closes the device it inherited lets go of its own
 * copy only: no kernel object of the parent's context goes with it. On
 * mlx5 ibv_close_device would destroy the context's UAR (handle 0 of a fresh
 * context, which no user object ever gets), so the parent's next PD would
 * take handle 0, and the parent's own close would later destroy whatever
 * UAR took that handle meanwhile. */
void case_fork_close_keeps_parent(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *pd;
	uint32_t h = 0;
	int pid, st = 0;

	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(rshare_device_close(a) != RSHARE_OK);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK(h != 0);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}

/* Send dev's command fd with `ledger` as the second fd, as a peer could. */
static rshare_device *recv_with_ledger(rshare_device *dev, int ledger)
{
	unsigned char hdr[16] = { 'R', 'S', 'H', 'C', 1, 0, 0, 0 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov = { hdr, sizeof(hdr) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	rshare_device *got = NULL;
	size_t len;
	int sv[2], fds[2];

	REQUIRE_OK(rshare_device_fd(dev, &fds[0]));
	fds[1] = ledger;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	REQUIRE(sendmsg(sv[0], &msg, 0) == (ssize_t)sizeof(hdr));
	CHECK_OK(rshare_channel_recv(sv[1], &got, NULL, 0, &len));
	close(sv[0]);
	close(sv[1]);
	return got;
}

/* The ledger is untrusted: one that is not a ledger, or another context's,
 * is dropped (the context keeps the bare level and its right table id). */
void case_ledger_untrusted(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(t->name), *d;
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_pd *pd, *copy = NULL;
	int junk = memfd_create("not-a-ledger", MFD_CLOEXEC), cfd, lfd;
	size_t len;

	REQUIRE(junk >= 0 && ftruncate(junk, 4096) == 0);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	d = recv_with_ledger(a, junk);
	REQUIRE(d);
	CHECK(!(caps_of(d) & RSHARE_CAP_LEDGER));
	CHECK_OK(rshare_pd_import(d, blob, len, &copy));
	CHECK_OK(rshare_pd_unimport(copy));
	CHECK_OK(rshare_device_close(d));
	/* c's real ledger with a's fd: its sentinel is not in a's table. */
	{
		rshare_device *cc = hw_channel_dev(c);
		(void)cc;
		CHECK_OK(rshare_device_close(cc));
	}
	REQUIRE_OK(rshare_device_fd(c, &cfd));
	lfd = -1;
	for (int fd = 3; fd < 1024 && lfd < 0; fd++) {
		char path[64], target[128] = "";
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (readlink(path, target, sizeof(target) - 1) > 0 &&
		    strstr(target, "rshare-ledger"))
			lfd = fd; /* a's or c's: either is foreign to one of them */
	}
	REQUIRE(lfd >= 0);
	d = recv_with_ledger(a, lfd);
	REQUIRE(d);
	{
		rshare_device *e = recv_with_ledger(c, lfd);
		/* The ledger belongs to exactly one of a and c. */
		CHECK(!!(caps_of(d) & RSHARE_CAP_LEDGER) + !!(caps_of(e) & RSHARE_CAP_LEDGER) == 1);
		CHECK_OK(rshare_device_close(e));
	}
	CHECK_OK(rshare_pd_import(d, blob, len, &copy)); /* the table id is right */
	CHECK_OK(rshare_pd_unimport(copy));
	CHECK_OK(rshare_device_close(d));
	close(junk);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

/* Only mlx5 implements import: rxe_sim1 shares nothing and says so. */
void case_no_import_provider(const struct hw_target *t)
{
	rshare_device *c = hw_open_dev(STANDIN_OTHER), *d = NULL;
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_pd *pd, *copy = NULL;
	size_t len;
	int fd, sv[2];

	(void)t;
	CHECK(caps_of(c) == RSHARE_CAP_NATIVE);
	REQUIRE_OK(rshare_device_fd(c, &fd));
	CHECK_ST(rshare_device_import(fd, &d), RSHARE_E_UNSUPPORTED);
	CHECK(rshare_last_errno() == EOPNOTSUPP);
	CHECK(d == NULL);
	REQUIRE_OK(rshare_pd_alloc(c, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	CHECK_ST(rshare_pd_import(c, blob, len, &copy), RSHARE_E_UNSUPPORTED);
	CHECK(copy == NULL);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK_OK(rshare_channel_send(sv[0], c, NULL, 0));
	CHECK_ST(rshare_channel_recv(sv[1], &d, NULL, 0, &len), RSHARE_E_UNSUPPORTED);
	CHECK(d == NULL);
	close(sv[0]);
	close(sv[1]);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(c));
}

/* STANDIN_VAR_FAULT: the VAR page is mapped but any touch of it faults,
 * as a test that nothing reads or writes a doorbell page. */
void case_var_fault_mode(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_var *var;
	void *page = NULL;
	int pid, st = 0;

	hw_hook("STANDIN_VAR_FAULT", "1");
	REQUIRE_OK(rshare_var_alloc(a, 0, &var));
	CHECK_OK(rshare_var_map(var, &page)); /* mapping is fine */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		_exit(*(volatile unsigned char *)page); /* a read: must fault */
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	hw_hook("STANDIN_VAR_FAULT", NULL);
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(a));
}

/* The ledger travels through the broker too: publish, attach, and the
 * attached context refuses a blob of a freed PD. */
void case_broker_ledger(const struct hw_target *t)
{
	unsigned char stale[RSHARE_BLOB_MAX];
	char dir[] = "/tmp/rshare-hw-ledger-XXXXXX", endpoint[108];
	rshare_device *a = hw_open_dev(t->name), *d = NULL;
	rshare_broker *br = NULL;
	rshare_share *sh = NULL;
	rshare_pd *gone, *pd, *got = NULL;
	size_t slen, n;
	char payload[4];

	/* A socket path in a folder of its own (the broker keeps a lock file
	 * next to it), removed at the end. */
	REQUIRE(mkdtemp(dir));
	snprintf(endpoint, sizeof(endpoint), "%s/broker.sock", dir);
	REQUIRE_OK(rshare_broker_start(endpoint, &br));
	REQUIRE_OK(rshare_pd_alloc(a, &gone));
	REQUIRE_OK(rshare_pd_export(gone, stale, sizeof(stale), &slen));
	CHECK_OK(rshare_pd_free(gone));
	REQUIRE_OK(rshare_pd_alloc(a, &pd)); /* the freed handle and PD number again */
	REQUIRE_OK(rshare_broker_publish(endpoint, "hw/ledger", a, NULL, 0, NULL, &sh));
	REQUIRE_OK(rshare_broker_attach(endpoint, "hw/ledger", 0, &d, payload, sizeof(payload),
					&n));
	CHECK(caps_of(d) & RSHARE_CAP_LEDGER);
	CHECK_ST(rshare_pd_import(d, stale, slen, &got), RSHARE_E_NOT_FOUND);
	CHECK(got == NULL);
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_broker_withdraw(sh));
	CHECK_OK(rshare_broker_stop(br));
	{
		char lock[160];

		snprintf(lock, sizeof(lock), "%s.lock", endpoint);
		unlink(lock);
		unlink(endpoint);
		CHECK(rmdir(dir) == 0);
	}
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}

/* _mlx5dv_get_export_sizes writes its whole struct whatever size it is
 * given: a newer libmlx5 with a larger struct must find room to spare. */
void case_export_sizes_room(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name);
	rshare_var *var;
	size_t len;

	hw_hook("STANDIN_EXPORT_SIZES_GROWN", "1");
	REQUIRE_OK(rshare_var_alloc(a, 0, &var));
	CHECK_OK(rshare_var_export(var, blob, sizeof(blob), &len)); /* aborts if short */
	hw_hook("STANDIN_EXPORT_SIZES_GROWN", NULL);
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(a));
}
