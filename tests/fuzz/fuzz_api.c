/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer target: programs of API calls. The input is a sequence of
 * operations on devices, PDs, VARs, MRs, DM, blobs and the channel; each
 * operation's argument bytes pick its handles: a live one, NULL, a stale
 * one (released earlier), a foreign one (a live handle of another kind) or
 * a made-up token, and its blobs, which other operations corrupt,
 * truncate or overwrite with input bytes.
 *
 * Invariants checked after every call (a violation aborts):
 * - the status is in the set the header documents for that call;
 * - a stale or foreign handle gives RSHARE_E_STALE (or INVAL if another
 *   argument is invalid too), never success; NULL gives RSHARE_E_INVAL;
 * - on failure, out-parameters are untouched (NOSPACE sets only *len);
 * - after the program, every handle it still holds releases with OK, and
 *   every CHECK_EVERY programs the process has the fds and memfd mappings
 *   it had before the first (nothing leaked).
 *
 * Seeds: tests/fuzz/seeds_api (run by ctest). A long run:
 *   build/tests/fuzz/fuzz_api -max_len=512 -timeout=10 -jobs=2 \
 *       /tmp/corpus_api tests/fuzz/seeds_api
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rshare/rshare.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One-time set-up the library does on first use (the device scan loads
 * rdma-core, which keeps an fd of its own) happens here, before the leak
 * baseline. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	rshare_device *d;
	size_t n;

	(void)argc;
	(void)argv;
	rshare_devices_count(&n);
	if (rshare_device_open(NULL, &d) == RSHARE_OK)
		rshare_device_close(d);
	if (rshare_device_import(0, &d) == RSHARE_OK)
		rshare_device_close(d);
	return 0;
}

enum { K_DEV, K_PD, K_VAR, K_MR, K_DM, K_BUF, NK };
#define NLIVE 6
#define NGRAVE 6
#define NBLOB 4
#define CHECK_EVERY 16
#define SENTINEL ((void *)(uintptr_t)0x5a5a5a5a5a5a5a5aull)

#define B(s) (1u << (-(s)))
#define S_OK B(RSHARE_OK)
#define S_IO B(RSHARE_E_IO)
#define S_INV B(RSHARE_E_INVAL)
#define S_STALE B(RSHARE_E_STALE)
#define S_NOMEM B(RSHARE_E_NOMEM)
#define S_UNSUP B(RSHARE_E_UNSUPPORTED)
#define S_SPACE B(RSHARE_E_NOSPACE)
#define S_BUSY B(RSHARE_E_BUSY)
#define S_NF B(RSHARE_E_NOT_FOUND)
/* The documented sets (rshare.h), by family. */
#define S_HANDLE (S_OK | S_INV | S_STALE)
#define S_ALLOC (S_HANDLE | S_IO | S_NOMEM | B(RSHARE_E_PERM) | S_UNSUP)
#define S_EXPORT (S_HANDLE | S_SPACE | S_UNSUP)
#define S_IMPORT (S_HANDLE | B(RSHARE_E_BLOB_CORRUPT) | B(RSHARE_E_BLOB_KIND) |        \
		  B(RSHARE_E_BLOB_VERSION) | B(RSHARE_E_DEVICE_MISMATCH) | S_IO | S_NOMEM | \
		  S_NF | S_UNSUP)
#define S_FREE (S_HANDLE | S_BUSY | S_IO | S_NF)
#define S_DMIO (S_HANDLE | S_IO | S_NF)

struct blob {
	uint8_t b[RSHARE_BLOB_MAX];
	size_t len;
};

static struct {
	void *live[NK][NLIVE];
	void *grave[NK][NGRAVE];
	unsigned ngrave[NK];
	struct blob blobs[NBLOB];
} st;

static const uint8_t *in;
static size_t in_left;

static uint8_t next(void)
{
	if (!in_left)
		return 0;
	in_left--;
	return *in++;
}

static void fail(const char *what, int status)
{
	fprintf(stderr, "fuzz_api: invariant broken: %s (status %s: %s)\n", what,
		rshare_status_name(status), rshare_last_error());
	abort();
}

static void expect(int status, unsigned allowed, const char *call)
{
	if (status > 0 || status < -31 || !(allowed & B(status)))
		fail(call, status);
}

/* How a handle argument was chosen, to know what the call must answer. */
enum pick_how { P_LIVE, P_NULL, P_STALE, P_FOREIGN, P_MADE_UP };

struct pick {
	void *h;
	enum pick_how how;
};

static struct pick pick(int kind)
{
	uint8_t b = next();
	struct pick p = { NULL, P_NULL };

	switch (b % 8) {
	case 4:
		return p;
	case 5:
		p.h = st.grave[kind][next() % NGRAVE];
		p.how = p.h ? P_STALE : P_NULL;
		return p;
	case 6:
		p.h = st.live[(kind + 1 + next() % (NK - 1)) % NK][next() % NLIVE];
		p.how = p.h ? P_FOREIGN : P_NULL;
		return p;
	case 7: {
		uint64_t v = 0;
		for (int i = 0; i < 8; i++)
			v = v << 8 | next();
		p.h = (void *)(uintptr_t)v;
		p.how = v ? P_MADE_UP : P_NULL;
		return p;
	}
	default:
		p.h = st.live[kind][b % NLIVE];
		p.how = p.h ? P_LIVE : P_NULL;
		return p;
	}
}

/* What a call on a handle picked as p must answer, whatever else. */
static void expect_pick(const struct pick *p, int status, const char *call)
{
	if (p->how == P_NULL && status != RSHARE_E_INVAL)
		fail(call, status);
	/* STALE, or INVAL when another argument is invalid too (argument
	 * checks may come first); never success. */
	if ((p->how == P_STALE || p->how == P_FOREIGN) && status != RSHARE_E_STALE &&
	    status != RSHARE_E_INVAL)
		fail(call, status);
}

static void forget(void *h)
{
	for (int k = 0; k < NK; k++)
		for (int i = 0; i < NLIVE; i++)
			if (st.live[k][i] == h && h) {
				st.live[k][i] = NULL;
				st.grave[k][st.ngrave[k]++ % NGRAVE] = h;
			}
}

/* A new handle of kind; false (and released again) if there is no room. */
static void keep(int kind, void *h, int (*release)(void *))
{
	for (int i = 0; i < NLIVE; i++)
		if (!st.live[kind][i]) {
			st.live[kind][i] = h;
			return;
		}
	if (release(h) != RSHARE_OK)
		fail("releasing a surplus handle", -1);
}

/* The releasers, as one signature. */
static int rel_dev(void *h) { return rshare_device_close(h); }
static int rel_pd(void *h) { return rshare_pd_unimport(h); }
static int rel_var(void *h) { return rshare_var_unimport(h); }
static int rel_mr(void *h) { return rshare_mr_unimport(h); }
static int rel_dm(void *h) { return rshare_dm_unimport(h); }
static int rel_buf(void *h) { return rshare_buf_unimport(h); }
static int (*const releasers[NK])(void *) = { rel_dev, rel_pd, rel_var, rel_mr, rel_dm,
					      rel_buf };

/* A creating call: out untouched on failure, kept on success. */
static void created(int kind, int status, void *out, unsigned allowed, const char *call)
{
	expect(status, allowed, call);
	if (status != RSHARE_OK) {
		if (out != SENTINEL)
			fail("out-parameter written on failure", status);
		return;
	}
	keep(kind, out, releasers[kind]);
}

/* A releasing call on p. */
static void released(const struct pick *p, int status, unsigned allowed, const char *call)
{
	expect(status, allowed, call);
	expect_pick(p, status, call);
	if (status == RSHARE_OK)
		forget(p->h);
}

/* An exporting call into blob slot: the buffer untouched on failure, *len
 * only on NOSPACE. */
static void export(const struct pick *p, int (*fn)(const void *, void *, size_t, size_t *),
		   const char *call)
{
	struct blob *b = &st.blobs[next() % NBLOB];
	uint8_t copy[RSHARE_BLOB_MAX];
	size_t cap = next() % 4 == 0 ? next() % RSHARE_BLOB_MAX : RSHARE_BLOB_MAX, len = 7777;
	int status;

	memcpy(copy, b->b, sizeof(copy));
	status = fn(p->h, b->b, cap, &len);
	expect(status, S_EXPORT, call);
	expect_pick(p, status, call);
	if (status == RSHARE_OK) {
		b->len = len;
		return;
	}
	if (memcmp(copy, b->b, sizeof(copy)) != 0 ||
	    (status != RSHARE_E_NOSPACE && len != 7777))
		fail("export wrote its output on failure", status);
}

static int pd_export(const void *h, void *buf, size_t cap, size_t *len) { return rshare_pd_export(h, buf, cap, len); }
static int var_export(const void *h, void *buf, size_t cap, size_t *len) { return rshare_var_export(h, buf, cap, len); }
static int mr_export(const void *h, void *buf, size_t cap, size_t *len) { return rshare_mr_export(h, buf, cap, len); }
static int dm_export(const void *h, void *buf, size_t cap, size_t *len) { return rshare_dm_export(h, buf, cap, len); }
static int buf_export(const void *h, void *buf, size_t cap, size_t *len) { return rshare_buf_export(h, buf, cap, len); }

static struct blob *pick_blob(void)
{
	return &st.blobs[next() % NBLOB];
}

static void op_channel(void)
{
	static uint8_t payload[RSHARE_BLOB_MAX * 2];
	struct pick d = pick(K_DEV);
	struct blob *b = pick_blob();
	rshare_device *got = SENTINEL;
	size_t len = 7777, cap;
	int sv[2], status, mode = next();
	void *buf;

	if (socketpair(AF_UNIX, mode & 1 ? SOCK_STREAM : SOCK_SEQPACKET, 0, sv) != 0)
		return;
	/* payload NULL with len 0, or the blob. */
	status = rshare_channel_send(sv[0], d.h, mode & 2 ? NULL : b->b, mode & 2 ? 0 : b->len);
	expect(status, S_HANDLE | S_IO, "channel_send");
	expect_pick(&d, status, "channel_send");
	if (status == RSHARE_OK) {
		buf = mode & 4 ? NULL : payload;
		cap = mode & 4 ? 0 : mode & 8 ? next() % sizeof(payload) : sizeof(payload);
		status = rshare_channel_recv(sv[1], &got, buf, cap, &len);
		expect(status, S_OK | S_INV | S_IO | B(RSHARE_E_NODEV) | S_SPACE |
				       B(RSHARE_E_PROTOCOL), "channel_recv");
		if (status != RSHARE_OK && got != SENTINEL)
			fail("channel_recv wrote *dev on failure", status);
		if (status != RSHARE_OK && status != RSHARE_E_NOSPACE && len != 7777)
			fail("channel_recv wrote *len on failure", status);
		if (status == RSHARE_OK)
			keep(K_DEV, got, rel_dev);
	}
	close(sv[0]);
	close(sv[1]);
}

static void op_device(int op)
{
	static const char *const names[] = { "sim0", NULL, "", "no-such-device" };
	void *out = SENTINEL;
	struct pick d;
	char name[RSHARE_NAME_MAX];
	uint64_t u64 = 42;
	uint32_t u32 = 42;
	int status, fd = -42, i = 42;
	size_t len = 7777;

	switch (op) {
	case 0:
		status = rshare_device_open(names[next() % 4], (rshare_device **)&out);
		created(K_DEV, status, out, S_OK | S_INV | S_IO | B(RSHARE_E_NODEV) | S_NOMEM |
						  B(RSHARE_E_PERM), "device_open");
		return;
	case 1:
		d = pick(K_DEV);
		released(&d, rshare_device_close(d.h), S_HANDLE | S_BUSY, "device_close");
		return;
	case 2:
		d = pick(K_DEV);
		status = rshare_device_fd(d.h, &fd);
		expect(status, S_HANDLE, "device_fd");
		expect_pick(&d, status, "device_fd");
		if (status != RSHARE_OK && fd != -42)
			fail("device_fd wrote on failure", status);
		if (status != RSHARE_OK)
			fd = next() % 2 ? -1 : 0; /* a negative fd, or stdin */
		status = rshare_device_import(fd, (rshare_device **)&out);
		created(K_DEV, status, out, S_OK | S_INV | S_IO | B(RSHARE_E_NODEV), "device_import");
		return;
	default:
		d = pick(K_DEV);
		status = rshare_device_name(d.h, name, next() % sizeof(name), &len);
		expect(status, S_HANDLE | S_SPACE, "device_name");
		expect_pick(&d, status, "device_name");
		status = rshare_device_guid(d.h, &u64);
		expect(status, S_HANDLE, "device_guid");
		status = rshare_device_caps(d.h, &u32);
		expect(status, S_HANDLE, "device_caps");
		status = rshare_device_provider(d.h, &i);
		expect(status, S_HANDLE, "device_provider");
		if (status != RSHARE_OK && (u64 != 42 || u32 != 42 || i != 42))
			fail("device accessor wrote on failure", status);
		return;
	}
}

static void op_pd(int op)
{
	void *out = SENTINEL;
	struct pick p;
	struct blob *b;
	uint32_t h = 42;
	int status;

	switch (op) {
	case 0:
		p = pick(K_DEV);
		status = rshare_pd_alloc(p.h, (rshare_pd **)&out);
		expect_pick(&p, status, "pd_alloc");
		created(K_PD, status, out, S_ALLOC, "pd_alloc");
		return;
	case 1:
		p = pick(K_PD);
		export(&p, pd_export, "pd_export");
		return;
	case 2:
		p = pick(K_DEV);
		b = pick_blob();
		status = rshare_pd_import(p.h, b->b, b->len, (rshare_pd **)&out);
		expect_pick(&p, status, "pd_import");
		created(K_PD, status, out, S_IMPORT, "pd_import");
		return;
	case 3:
		p = pick(K_PD);
		released(&p, rshare_pd_unimport(p.h), S_HANDLE | S_BUSY, "pd_unimport");
		return;
	case 4:
		p = pick(K_PD);
		released(&p, rshare_pd_free(p.h), S_FREE, "pd_free");
		return;
	default:
		p = pick(K_PD);
		status = rshare_pd_handle(p.h, &h);
		expect(status, S_HANDLE, "pd_handle");
		expect_pick(&p, status, "pd_handle");
		if (status != RSHARE_OK && h != 42)
			fail("pd_handle wrote on failure", status);
		return;
	}
}

static void op_var(int op)
{
	void *out = SENTINEL, *addr = SENTINEL;
	struct pick p;
	struct blob *b;
	uint32_t page = 42, length = 42;
	uint64_t off = 42;
	int status;

	switch (op) {
	case 0:
		p = pick(K_DEV);
		status = rshare_var_alloc(p.h, next() % 3, (rshare_var **)&out);
		expect_pick(&p, status, "var_alloc");
		created(K_VAR, status, out, S_ALLOC, "var_alloc");
		return;
	case 1:
		p = pick(K_VAR);
		export(&p, var_export, "var_export");
		return;
	case 2:
		p = pick(K_DEV);
		b = pick_blob();
		status = rshare_var_import(p.h, b->b, b->len, (rshare_var **)&out);
		expect_pick(&p, status, "var_import");
		created(K_VAR, status, out, S_IMPORT, "var_import");
		return;
	case 3:
		p = pick(K_VAR);
		status = rshare_var_map(p.h, &addr);
		expect(status, S_HANDLE | S_IO, "var_map");
		expect_pick(&p, status, "var_map");
		if (status == RSHARE_OK)
			((volatile uint8_t *)addr)[next()] = next(); /* the page is ours */
		else if (addr != SENTINEL)
			fail("var_map wrote on failure", status);
		return;
	case 4:
		p = pick(K_VAR);
		status = rshare_var_unmap(p.h);
		expect(status, S_HANDLE, "var_unmap");
		expect_pick(&p, status, "var_unmap");
		return;
	case 5:
		p = pick(K_VAR);
		status = rshare_var_attrs(p.h, &page, &length, &off);
		expect(status, S_HANDLE, "var_attrs");
		expect_pick(&p, status, "var_attrs");
		if (status != RSHARE_OK && (page != 42 || length != 42 || off != 42))
			fail("var_attrs wrote on failure", status);
		return;
	case 6:
		p = pick(K_VAR);
		released(&p, rshare_var_unimport(p.h), S_HANDLE, "var_unimport");
		return;
	default:
		p = pick(K_VAR);
		released(&p, rshare_var_free(p.h), S_FREE, "var_free");
		return;
	}
}

static void op_mr(int op)
{
	static uint8_t region[4][4096] __attribute__((aligned(4096)));
	void *out = SENTINEL;
	struct pick p;
	struct blob *b;
	uint64_t addr = 42, length = 42;
	int status;

	switch (op) {
	case 0: {
		size_t off = next() % 64, len = next() % 2 ? 4096 - off : next();
		p = pick(K_PD);
		status = rshare_mr_reg(p.h, region[next() % 4] + off, len, next() % 32,
				       (rshare_mr **)&out);
		expect_pick(&p, status, "mr_reg");
		created(K_MR, status, out, S_ALLOC | S_NF, "mr_reg");
		return;
	}
	case 1:
		p = pick(K_MR);
		export(&p, mr_export, "mr_export");
		return;
	case 2:
		p = pick(K_PD);
		b = pick_blob();
		status = rshare_mr_import(p.h, b->b, b->len, (rshare_mr **)&out);
		expect_pick(&p, status, "mr_import");
		created(K_MR, status, out, S_IMPORT, "mr_import");
		return;
	case 3:
		p = pick(K_MR);
		released(&p, rshare_mr_unimport(p.h), S_HANDLE, "mr_unimport");
		return;
	case 4:
		p = pick(K_MR);
		released(&p, rshare_mr_dereg(p.h), S_FREE, "mr_dereg");
		return;
	default:
		p = pick(K_MR);
		status = rshare_mr_attrs(p.h, &addr, &length, NULL, NULL, NULL);
		expect(status, S_HANDLE, "mr_attrs");
		expect_pick(&p, status, "mr_attrs");
		if (status != RSHARE_OK && (addr != 42 || length != 42))
			fail("mr_attrs wrote on failure", status);
		return;
	}
}

static void op_dm(int op)
{
	void *out = SENTINEL;
	struct pick p;
	struct blob *b;
	uint8_t buf[64], copy[64];
	uint64_t off, len;
	int status;

	switch (op) {
	case 0:
		p = pick(K_DEV);
		status = rshare_dm_alloc(p.h, next() % 2 ? 64 : (uint64_t)next() << (next() % 40),
					 (rshare_dm **)&out);
		expect_pick(&p, status, "dm_alloc");
		created(K_DM, status, out, S_ALLOC, "dm_alloc");
		return;
	case 1:
		p = pick(K_DM);
		export(&p, dm_export, "dm_export");
		return;
	case 2:
		p = pick(K_DEV);
		b = pick_blob();
		status = rshare_dm_import(p.h, b->b, b->len, (rshare_dm **)&out);
		expect_pick(&p, status, "dm_import");
		created(K_DM, status, out, S_IMPORT, "dm_import");
		return;
	case 3:
		p = pick(K_DM);
		released(&p, rshare_dm_unimport(p.h), S_HANDLE, "dm_unimport");
		return;
	case 4:
		p = pick(K_DM);
		released(&p, rshare_dm_free(p.h), S_FREE, "dm_free");
		return;
	default:
		p = pick(K_DM);
		off = next() % 2 ? next() : (uint64_t)next() << 56;
		len = next() % (sizeof(buf) + 1);
		memset(buf, 0xab, sizeof(buf));
		memcpy(copy, buf, sizeof(buf));
		status = op % 2 ? rshare_dm_write(p.h, off, buf, len)
				: rshare_dm_read(p.h, off, buf, len);
		expect(status, S_DMIO, "dm_write/read");
		expect_pick(&p, status, "dm_write/read");
		if (status != RSHARE_OK && memcmp(buf, copy, sizeof(buf)) != 0)
			fail("dm_read wrote on failure", status);
		return;
	}
}

/* Shared buffers (1.2): made, exported, imported with a live buffer's fd,
 * a made-up one or none, released; accessors write nothing on failure. */
static void op_buf(int op)
{
	void *out = SENTINEL, *ptr = SENTINEL;
	struct pick p;
	struct blob *b;
	size_t len = 7777;
	int status, fd = -7;

	switch (op) {
	case 0:
		p = pick(K_PD);
		status = rshare_buf_alloc(p.h, next() % 2 ? 4096 : next(), next() % 32,
					  (rshare_buf **)&out);
		expect_pick(&p, status, "buf_alloc");
		created(K_BUF, status, out, S_ALLOC | S_NF, "buf_alloc");
		return;
	case 1:
		p = pick(K_BUF);
		export(&p, buf_export, "buf_export");
		return;
	case 2: {
		struct pick src = pick(K_BUF);

		if (next() % 2 == 0 || rshare_buf_fd(src.h, &fd) != RSHARE_OK)
			fd = next() % 3 ? -1 : next() % 64;
		p = pick(K_PD);
		b = pick_blob();
		status = rshare_buf_import(p.h, b->b, b->len, fd, (rshare_buf **)&out);
		expect_pick(&p, status, "buf_import");
		created(K_BUF, status, out, S_IMPORT | B(RSHARE_E_FD_MISMATCH), "buf_import");
		return;
	}
	case 3:
		p = pick(K_BUF);
		released(&p, rshare_buf_unimport(p.h), S_HANDLE, "buf_unimport");
		return;
	case 4:
		p = pick(K_BUF);
		released(&p, rshare_buf_free(p.h), S_FREE, "buf_free");
		return;
	default:
		p = pick(K_BUF);
		status = op % 2 ? rshare_buf_ptr(p.h, &ptr, &len) : rshare_buf_fd(p.h, &fd);
		expect(status, S_HANDLE, "buf_ptr/fd");
		expect_pick(&p, status, "buf_ptr/fd");
		if (status != RSHARE_OK && (ptr != SENTINEL || len != 7777 || fd != -7))
			fail("buf_ptr/fd wrote on failure", status);
		return;
	}
}

static void op_blob(int op)
{
	struct blob *b = pick_blob();
	int kind = 42, status;

	switch (op) {
	case 0: /* flip a byte */
		if (b->len)
			b->b[next() % b->len] ^= (uint8_t)(next() | 1);
		return;
	case 1: /* truncate or extend */
		b->len = next() % (RSHARE_BLOB_MAX + 1);
		return;
	case 2: /* bytes from the input */
		b->len = next() % (RSHARE_BLOB_MAX + 1);
		for (size_t i = 0; i < b->len; i++)
			b->b[i] = next();
		return;
	default:
		status = rshare_blob_kind(b->b, b->len, &kind);
		expect(status, S_OK | S_INV | B(RSHARE_E_BLOB_CORRUPT) | B(RSHARE_E_BLOB_KIND) |
				       B(RSHARE_E_BLOB_VERSION), "blob_kind");
		if (status != RSHARE_OK && kind != 42)
			fail("blob_kind wrote on failure", status);
		return;
	}
}

/* Release everything the program still holds: buffers and MRs before their PDs,
 * objects before their devices. Every release must succeed. */
static void cleanup(void)
{
	static const int order[] = { K_BUF, K_MR, K_PD, K_VAR, K_DM, K_DEV };

	for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++)
		for (int i = 0; i < NLIVE; i++) {
			void *h = st.live[order[o]][i];
			int status;

			if (!h)
				continue;
			status = releasers[order[o]](h);
			if (status != RSHARE_OK)
				fail("releasing what the program holds", status);
			st.live[order[o]][i] = NULL;
		}
	memset(&st, 0, sizeof(st));
}

static void list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], target[300];

	while (d && (e = readdir(d))) {
		ssize_t n;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			fprintf(stderr, "  fd %s -> %s\n", e->d_name, target);
		}
	}
	if (d)
		closedir(d);
}

/* Open fds that could be the library's: everything but pipes. The library
 * makes no pipe; libFuzzer does, whenever it starts its symbolizer to name
 * a newly covered function, which may come after the baseline. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], target[300];
	int n = 0;

	if (!d)
		abort();
	while ((e = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = 0;
			n += strncmp(target, "pipe:", 5) != 0;
		}
	}
	closedir(d);
	return n;
}

/* Mappings of the library's memfds (object tables, VAR pages). */
static int count_memfd_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		abort();
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:") != NULL;
	fclose(f);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fds0 = -1, maps0, runs;
	in = data;
	in_left = size;
	while (in_left) {
		uint8_t op = next();

		switch (op % 9) {
		case 0: op_device(next() % 4); break;
		case 1: op_pd(next() % 6); break;
		case 2: op_var(next() % 8); break;
		case 3: op_mr(next() % 6); break;
		case 4: op_dm(next() % 7); break;
		case 5: op_blob(next() % 4); break;
		case 6: op_channel(); break;
		case 7: op_buf(next() % 7); break;
		default: op_device(3); break; /* the accessors */
		}
	}
	cleanup();
	if (++runs % CHECK_EVERY)
		return 0;
	/* The baseline is taken after the first batch: libFuzzer itself opens
	 * a few fds once it has started. */
	if (fds0 < 0) {
		fds0 = count_fds();
		maps0 = count_memfd_maps();
	}
	if (count_fds() != fds0 || count_memfd_maps() != maps0) {
		fprintf(stderr, "fuzz_api: leak: %d fds (was %d), %d memfd mappings (was %d)\n",
			count_fds(), fds0, count_memfd_maps(), maps0);
		list_fds();
		abort();
	}
	return 0;
}
