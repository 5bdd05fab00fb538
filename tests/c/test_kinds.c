/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Every kind the library names (rshare_kind_name) through every path the
 * kind table (capi/src/core/kinds.h) drives: its blob (kind, size, field,
 * JSON, text form), a payload of one blob of each kind split with
 * rshare_blob_size, and a forked child's release of the inherited objects.
 * A kind added to the table without a maker here fails, so a new kind is
 * walked through all of them too. Also rshare_blob_size's refusals and
 * the provider names.
 */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* How to make, export, probe and release an object of one kind on sim0. */
struct maker {
	int (*make)(rshare_device *dev, rshare_pd *pd, void **out);
	int (*export)(const void *obj, void *buf, size_t cap, size_t *len);
	int (*handle)(const void *obj, uint32_t *handle);
	int (*release)(void *obj);
};

static int make_pd(rshare_device *dev, rshare_pd *pd, void **out)
{
	(void)pd;
	return rshare_pd_alloc(dev, (rshare_pd **)out);
}

static int make_var(rshare_device *dev, rshare_pd *pd, void **out)
{
	(void)pd;
	return rshare_var_alloc(dev, 0, (rshare_var **)out);
}

static int make_mr(rshare_device *dev, rshare_pd *pd, void **out)
{
	static char region[4096] __attribute__((aligned(4096)));

	(void)dev;
	return rshare_mr_reg(pd, region, sizeof(region), RSHARE_ACCESS_LOCAL_WRITE,
			     (rshare_mr **)out);
}

static int make_dm(rshare_device *dev, rshare_pd *pd, void **out)
{
	(void)pd;
	return rshare_dm_alloc(dev, 64, (rshare_dm **)out);
}

static int make_buf(rshare_device *dev, rshare_pd *pd, void **out)
{
	(void)dev;
	return rshare_buf_alloc(pd, 4096, RSHARE_ACCESS_LOCAL_WRITE, (rshare_buf **)out);
}

/* A buffer's probe: its memfd (STALE once released), as a "handle". */
static int buf_probe(const void *buf, uint32_t *handle)
{
	int fd = -1, status = rshare_buf_fd(buf, &fd);

	*handle = (uint32_t)fd;
	return status;
}

static int var_handle(const void *var, uint32_t *handle)
{
	return rshare_var_handle(var, handle);
}

#define MAKER(k, make, export, handle, release)                                  \
	[k] = { make, (int (*)(const void *, void *, size_t, size_t *))export,   \
		(int (*)(const void *, uint32_t *))handle, (int (*)(void *))release }
static const struct maker makers[] = {
	MAKER(RSHARE_KIND_PD, make_pd, rshare_pd_export, rshare_pd_handle, rshare_pd_free),
	MAKER(RSHARE_KIND_VAR, make_var, rshare_var_export, var_handle, rshare_var_free),
	MAKER(RSHARE_KIND_MR, make_mr, rshare_mr_export, rshare_mr_handle, rshare_mr_dereg),
	MAKER(RSHARE_KIND_DM, make_dm, rshare_dm_export, rshare_dm_handle, rshare_dm_free),
	MAKER(RSHARE_KIND_BUF, make_buf, rshare_buf_export, buf_probe, rshare_buf_free),
};
#define NMAKERS ((int)(sizeof(makers) / sizeof(makers[0])))

#define MAX_KINDS 15

struct world {
	rshare_device *dev;
	rshare_pd *pd; /* what an MR is registered on */
	int nkinds;    /* kinds 1 .. nkinds have names */
	void *obj[MAX_KINDS + 1];
	unsigned char blob[MAX_KINDS + 1][RSHARE_BLOB_MAX];
	size_t len[MAX_KINDS + 1];
};

static void names(struct world *w)
{
	w->nkinds = 0;
	while (w->nkinds < MAX_KINDS && rshare_kind_name(w->nkinds + 1))
		w->nkinds++;
	CHECK(w->nkinds >= 4);
	CHECK(strcmp(rshare_kind_name(RSHARE_KIND_PD), "pd") == 0);
	CHECK(strcmp(rshare_kind_name(RSHARE_KIND_VAR), "var") == 0);
	CHECK(strcmp(rshare_kind_name(RSHARE_KIND_MR), "mr") == 0);
	CHECK(strcmp(rshare_kind_name(RSHARE_KIND_DM), "dm") == 0);
	CHECK(rshare_kind_name(0) == NULL);
	CHECK(rshare_kind_name(-1) == NULL);
	CHECK(rshare_kind_name(w->nkinds + 1) == NULL);
	CHECK(strcmp(rshare_provider_name(RSHARE_PROVIDER_HW), "hw") == 0);
	CHECK(strcmp(rshare_provider_name(RSHARE_PROVIDER_SIM), "sim") == 0);
	CHECK(rshare_provider_name(0) == NULL);
	CHECK(rshare_provider_name(3) == NULL);
	/* Every kind the library knows has a maker here. */
	for (int k = 1; k <= w->nkinds; k++)
		if (k >= NMAKERS || !makers[k].make) {
			t_fail++;
			fprintf(stderr, "kind %d (%s) has no maker in test_kinds.c\n", k,
				rshare_kind_name(k));
		}
}

/* One object of each kind, and its blob checked through the table's paths. */
static void make_all(struct world *w)
{
	REQUIRE_OK(rshare_device_open("sim0", &w->dev));
	REQUIRE_OK(rshare_pd_alloc(w->dev, &w->pd));
	for (int k = 1; k <= w->nkinds && k < NMAKERS; k++) {
		char json[512], text[RSHARE_TEXT_MAX], want[64];
		unsigned char back[RSHARE_BLOB_MAX];
		size_t n, tn, bn;
		uint64_t v;
		int kind;

		REQUIRE_OK(makers[k].make(w->dev, w->pd, &w->obj[k]));
		REQUIRE_OK(makers[k].export(w->obj[k], w->blob[k], RSHARE_BLOB_MAX, &w->len[k]));
		CHECK_OK(rshare_blob_kind(w->blob[k], w->len[k], &kind));
		CHECK(kind == k);
		CHECK_OK(rshare_blob_field(w->blob[k], w->len[k], RSHARE_FIELD_KIND, &v));
		CHECK(v == (uint64_t)k);
		CHECK_OK(rshare_blob_size(w->blob[k], w->len[k], &n));
		CHECK(n == w->len[k]);
		CHECK_OK(rshare_blob_describe(w->blob[k], w->len[k], json, sizeof(json), &n));
		snprintf(want, sizeof(want), "\"kind\":\"%s\"", rshare_kind_name(k));
		CHECK(strstr(json, want) != NULL);
		CHECK(strstr(json, "\"provider\":\"sim\"") != NULL);
		CHECK_OK(rshare_blob_to_text(w->blob[k], w->len[k], text, sizeof(text), &tn));
		CHECK_OK(rshare_blob_from_text(text, back, sizeof(back), &bn));
		CHECK(bn == w->len[k] && memcmp(back, w->blob[k], bn) == 0);
	}
}

/* The blobs of every kind, concatenated, come apart with rshare_blob_size. */
static void split_payload(struct world *w)
{
	unsigned char payload[RSHARE_PAYLOAD_MAX];
	size_t total = 0, off = 0, n;
	int k = 1;

	for (int i = 1; i <= w->nkinds && i < NMAKERS; i++) {
		memcpy(payload + total, w->blob[i], w->len[i]);
		total += w->len[i];
	}
	while (off < total) {
		int kind;

		CHECK_OK(rshare_blob_size(payload + off, total - off, &n));
		CHECK(n == w->len[k]);
		CHECK_OK(rshare_blob_kind(payload + off, n, &kind));
		CHECK(kind == k);
		off += n;
		k++;
	}
	CHECK(off == total);
	/* The last blob cut short: its length field says more than is left. */
	CHECK_ST(rshare_blob_size(payload + total - w->len[k - 1], w->len[k - 1] - 1, &n),
		 RSHARE_E_BLOB_CORRUPT);
	CHECK_MSG("more than are left");
}

/* A forked child that closes the inherited device releases every kind. */
static void fork_releases_every_kind(struct world *w)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		uint32_t h;

		t_fail = 0;
		CHECK_OK(rshare_device_close(w->dev));
		for (int k = 1; k <= w->nkinds && k < NMAKERS; k++) {
			int got = makers[k].handle(w->obj[k], &h);

			if (got != RSHARE_E_STALE) {
				t_fail++;
				fprintf(stderr, "child: the inherited %s is %s after the device "
					"closed, not released\n", rshare_kind_name(k),
					rshare_status_name(got));
			}
		}
		_exit(t_fail ? 1 : 0);
	}
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The parent's objects live on. */
	for (int k = 1; k <= w->nkinds && k < NMAKERS; k++) {
		uint32_t h;

		CHECK_OK(makers[k].handle(w->obj[k], &h));
	}
}

static void free_all(struct world *w)
{
	for (int k = w->nkinds < NMAKERS - 1 ? w->nkinds : NMAKERS - 1; k >= 1; k--)
		CHECK_OK(makers[k].release(w->obj[k]));
	CHECK_OK(rshare_pd_free(w->pd));
	CHECK_OK(rshare_device_close(w->dev));
}

/* rshare_blob_size refuses what is not a framed blob, naming why. */
static void blob_size_refusals(const struct world *w)
{
	unsigned char bad[RSHARE_BLOB_MAX];
	const unsigned char *pd = w->blob[RSHARE_KIND_PD];
	size_t pd_len = w->len[RSHARE_KIND_PD], n = 12345;

	CHECK_ST(rshare_blob_size(NULL, 10, &n), RSHARE_E_INVAL);
	CHECK_MSG("buf is NULL");
	CHECK_ST(rshare_blob_size(pd, pd_len, NULL), RSHARE_E_INVAL);
	CHECK_MSG("len is NULL");
	CHECK_ST(rshare_blob_size(pd, 9, &n), RSHARE_E_BLOB_CORRUPT);
	CHECK_MSG("truncated");
	CHECK(n == 12345);
	memcpy(bad, pd, pd_len);
	bad[0] ^= 1;
	CHECK_ST(rshare_blob_size(bad, pd_len, &n), RSHARE_E_BLOB_CORRUPT);
	CHECK_MSG("bad magic");
	memcpy(bad, pd, pd_len);
	bad[8] = 4; /* length field: 4 bytes, less than any blob */
	bad[9] = 0;
	CHECK_ST(rshare_blob_size(bad, pd_len, &n), RSHARE_E_BLOB_CORRUPT);
	CHECK_MSG("too short for a blob");
	/* Framing only: a damaged checksum still frames (the import refuses). */
	memcpy(bad, pd, pd_len);
	bad[pd_len - 1] ^= 0xff;
	CHECK_OK(rshare_blob_size(bad, pd_len, &n));
	CHECK(n == pd_len);
}

static struct world w;

/* Every case starts from one object of each kind (their blobs checked). */
static void setup(void)
{
	names(&w);
	make_all(&w);
}

static void teardown(void)
{
	free_all(&w);
}

static void case_names(void)
{
	CHECK(w.nkinds >= 4); /* the checks themselves run in setup() */
}

static void case_payload_split(void)
{
	split_payload(&w);
}

static void case_blob_size_refusals(void)
{
	blob_size_refusals(&w);
}

static void case_fork_releases_every_kind(void)
{
	fork_releases_every_kind(&w);
}

#define T_PROGRAM_test_kinds ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
