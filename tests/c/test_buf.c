/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared buffers (1.2) on sim0: memory registered once and shared with its
 * keys. A forked child receives the device, the blob and the memfd in one
 * rshare_channel_sendv message, imports the buffer, sees the parent's
 * bytes, writes its own and reports the MR's keys and address, which must
 * be the parent's; the parent reads the child's write. Then what an
 * importer refuses (another memfd, an unsealed one, a regular file, a
 * closed fd: RSHARE_E_FD_MISMATCH or RSHARE_E_INVAL), a late import after
 * rshare_buf_free (NOT_FOUND) while an earlier importer's memory lives on,
 * the borrowed MR that cannot be released on its own, stale, NULL and
 * garbage arguments, and no fd leaked by any of it.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define BUF_LEN (1u << 20)
#define HALF (BUF_LEN / 2)
#define ACCESS (RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_WRITE | RSHARE_ACCESS_REMOTE_READ)

/* What the child reports back: the MR as it sees it. */
struct keys {
	uint64_t addr, length;
	uint32_t lkey, rkey, access;
	int ok; /* the child saw the parent's bytes */
};

/* The payload: a PD blob then a buffer blob, each after its u16 length. */
static size_t pack(unsigned char *out, const unsigned char *a, size_t alen,
		   const unsigned char *b, size_t blen)
{
	out[0] = (unsigned char)alen;
	memcpy(out + 1, a, alen);
	out[1 + alen] = (unsigned char)blen;
	memcpy(out + 2 + alen, b, blen);
	return 2 + alen + blen;
}

static int child(int sock)
{
	unsigned char msg[2 * RSHARE_BLOB_MAX + 2];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_buf *buf;
	rshare_mr *mr;
	struct keys k = { 0 };
	size_t len, nfds, plen, blen, n;
	unsigned char *p;
	void *ptr;
	int fd;

	REQUIRE_OK(rshare_channel_recvv(sock, &dev, &fd, 1, &nfds, msg, sizeof(msg), &len));
	REQUIRE(nfds == 1);
	plen = msg[0];
	blen = msg[1 + plen];
	REQUIRE(2 + plen + blen == len);
	REQUIRE_OK(rshare_pd_import(dev, msg + 1, plen, &pd));
	REQUIRE_OK(rshare_buf_import(pd, msg + 2 + plen, blen, fd, &buf));
	close(fd); /* the buffer holds its own duplicate */
	REQUIRE_OK(rshare_buf_ptr(buf, &ptr, &n));
	p = ptr;
	k.ok = n == BUF_LEN;
	for (size_t i = 0; i < HALF; i++)
		k.ok &= p[i] == (unsigned char)(i * 7);
	for (size_t i = HALF; i < BUF_LEN; i++)
		p[i] = (unsigned char)(i * 13);
	REQUIRE_OK(rshare_buf_mr(buf, &mr));
	REQUIRE_OK(rshare_mr_attrs(mr, &k.addr, &k.length, &k.lkey, &k.rkey, &k.access));
	CHECK(write(sock, &k, sizeof(k)) == (ssize_t)sizeof(k));
	CHECK_OK(rshare_buf_unimport(buf));
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_device_close(dev));
	return t_fail ? 1 : 0;
}

/* A memfd of len bytes with the given seals (0: none, not even sealable). */
static int memfd(size_t len, int seals)
{
	int fd = memfd_create("other", MFD_CLOEXEC | (seals ? MFD_ALLOW_SEALING : 0));

	REQUIRE(fd >= 0 && ftruncate(fd, (off_t)len) == 0);
	if (seals)
		REQUIRE(fcntl(fd, F_ADD_SEALS, seals) == 0);
	return fd;
}

/* Every fd that is not the buffer's memory is refused, naming the cause;
 * the buffer's own fd with the wrong PD or table too. Nothing leaks. */
static void wrong_fds(rshare_device *dev, rshare_pd *pd, const unsigned char *blob,
		      size_t blen, int good_fd)
{
	int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	char path[] = "/tmp/rshare-buf-XXXXXX";
	rshare_buf *out = (rshare_buf *)&seals;
	int fd, before = count_fds();

	fd = memfd(BUF_LEN, seals); /* right size and seals, another inode */
	CHECK_ST(rshare_buf_import(pd, blob, blen, fd, &out), RSHARE_E_FD_MISMATCH);
	CHECK_MSG("another memfd");
	close(fd);
	fd = memfd(BUF_LEN, 0); /* not sealed against resizing */
	CHECK_ST(rshare_buf_import(pd, blob, blen, fd, &out), RSHARE_E_FD_MISMATCH);
	CHECK_MSG("seals");
	close(fd);
	fd = memfd(BUF_LEN / 2, seals); /* another size */
	CHECK_ST(rshare_buf_import(pd, blob, blen, fd, &out), RSHARE_E_FD_MISMATCH);
	close(fd);
	fd = mkstemp(path); /* a regular file of the right size */
	REQUIRE(fd >= 0 && ftruncate(fd, BUF_LEN) == 0);
	unlink(path);
	CHECK_ST(rshare_buf_import(pd, blob, blen, fd, &out), RSHARE_E_FD_MISMATCH);
	CHECK_MSG("not a memfd");
	CHECK_ST(rshare_buf_import(pd, blob, blen, -1, &out), RSHARE_E_INVAL);
	close(fd);
	CHECK_ST(rshare_buf_import(pd, blob, blen, fd, &out), RSHARE_E_INVAL); /* closed */
	CHECK(out == (rshare_buf *)&seals); /* out untouched on failure */
	{ /* The right memory, the wrong PD or table: the MR's import refuses. */
		rshare_device *other;
		rshare_pd *pd2, *pd3;

		REQUIRE_OK(rshare_pd_alloc(dev, &pd2));
		CHECK_ST(rshare_buf_import(pd2, blob, blen, good_fd, &out),
			 RSHARE_E_DEVICE_MISMATCH);
		CHECK_OK(rshare_pd_free(pd2));
		REQUIRE_OK(rshare_device_open("sim0", &other)); /* a table of its own */
		REQUIRE_OK(rshare_pd_alloc(other, &pd3));
		CHECK_ST(rshare_buf_import(pd3, blob, blen, good_fd, &out),
			 RSHARE_E_DEVICE_MISMATCH);
		CHECK_OK(rshare_pd_free(pd3));
		CHECK_OK(rshare_device_close(other));
		CHECK(out == (rshare_buf *)&seals);
	}
	CHECK(count_fds() == before);
}

/* NULL, stale, wrong-kind and garbage arguments. */
static void bad_args(rshare_device *dev, rshare_pd *pd, rshare_buf *stale,
		     const unsigned char *blob, size_t blen, int fd)
{
	unsigned char pd_blob[RSHARE_BLOB_MAX], junk[RSHARE_BLOB_MAX];
	rshare_buf *out, *wrong = (rshare_buf *)pd;
	rshare_mr *mr;
	size_t len, plen = export_pd(pd, pd_blob);
	void *ptr;
	int got;

	CHECK_ST(rshare_buf_alloc(NULL, 16, 0, &out), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_alloc(pd, 0, 0, &out), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_alloc(pd, 16, 0x100, &out), RSHARE_E_INVAL);
	CHECK_MSG("access");
	CHECK_ST(rshare_buf_alloc(pd, 16, 0, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_alloc((rshare_pd *)dev, 16, 0, &out), RSHARE_E_STALE);
	CHECK_ST(rshare_buf_import(pd, NULL, blen, fd, &out), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_import(pd, blob, blen, fd, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_import(NULL, blob, blen, fd, &out), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_import(pd, pd_blob, plen, fd, &out), RSHARE_E_BLOB_KIND);
	CHECK_ST(rshare_mr_import(pd, blob, blen, &mr), RSHARE_E_BLOB_KIND);
	memcpy(junk, blob, blen);
	junk[blen / 2] ^= 0x40;
	CHECK_ST(rshare_buf_import(pd, junk, blen, fd, &out), RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(rshare_buf_import(pd, blob, blen - 1, fd, &out), RSHARE_E_BLOB_CORRUPT);
	for (int i = 0; i < 2; i++) {
		rshare_buf *h = i ? stale : wrong;
		int want = RSHARE_E_STALE;

		CHECK_ST(rshare_buf_export(h, junk, sizeof(junk), &len), want);
		CHECK_ST(rshare_buf_fd(h, &got), want);
		CHECK_ST(rshare_buf_ptr(h, &ptr, &len), want);
		CHECK_ST(rshare_buf_mr(h, &mr), want);
		CHECK_ST(rshare_buf_unimport(h), want);
		CHECK_ST(rshare_buf_free(h), want);
	}
	CHECK_ST(rshare_buf_export(NULL, junk, sizeof(junk), &len), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_fd(NULL, &got), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_ptr(NULL, &ptr, &len), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_mr(NULL, &mr), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_unimport(NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_buf_free(NULL), RSHARE_E_INVAL);
}

/* The broker keeps a buffer's memfd with the share and hands it to every
 * rshare_broker_attachv (since 1.2); a plain attach is refused, and so is
 * an fd that is not a sealed memfd. */
static void broker_carries_buffers(rshare_device *dev, rshare_pd *pd)
{
	unsigned char payload[2 * RSHARE_BLOB_MAX];
	char dir[] = "/tmp/rshare-bufb-XXXXXX", ep[64];
	rshare_broker *b;
	rshare_share *share, *bad = NULL;
	rshare_device *got;
	rshare_pd *gpd;
	rshare_buf *buf, *gbuf;
	size_t plen, blen, len, n = 99;
	int fd, fds[2] = { -1, -1 }, p[2];
	void *ptr;

	REQUIRE(mkdtemp(dir) != NULL && pipe(p) == 0);
	snprintf(ep, sizeof(ep), "%s/b.sock", dir);
	REQUIRE_OK(rshare_broker_start(ep, &b));
	REQUIRE_OK(rshare_buf_alloc(pd, 4096, RSHARE_ACCESS_LOCAL_WRITE, &buf));
	REQUIRE_OK(rshare_buf_ptr(buf, &ptr, NULL));
	memcpy(ptr, "by name", 8);
	REQUIRE_OK(rshare_buf_fd(buf, &fd));
	plen = export_pd(pd, payload);
	REQUIRE_OK(rshare_buf_export(buf, payload + plen, sizeof(payload) - plen, &blen));
	CHECK_ST(rshare_broker_publishv(ep, "bad", dev, &p[0], 1, payload, plen, NULL, &bad),
		 RSHARE_E_FD_MISMATCH);
	CHECK(bad == NULL);
	REQUIRE_OK(rshare_broker_publishv(ep, "team/buf", dev, &fd, 1, payload, plen + blen, NULL,
					  &share));
	/* A receiver that takes no fds (as a 1.1 library) is refused cleanly. */
	CHECK_ST(rshare_broker_attach(ep, "team/buf", 0, &got, payload, sizeof(payload), &len),
		 RSHARE_E_PROTOCOL);
	CHECK_MSG("rshare_broker_attachv");
	CHECK_ST(rshare_broker_attachv(ep, "team/buf", 0, &got, NULL, 0, &n, payload,
				       sizeof(payload), &len), RSHARE_E_NOSPACE);
	CHECK(n == 1);
	CHECK_OK(rshare_broker_attachv(ep, "team/buf", 0, &got, fds, 2, &n, payload,
				       sizeof(payload), &len));
	CHECK(n == 1 && len == plen + blen);
	REQUIRE_OK(rshare_pd_import(got, payload, plen, &gpd));
	REQUIRE_OK(rshare_buf_import(gpd, payload + plen, blen, fds[0], &gbuf));
	close(fds[0]);
	REQUIRE_OK(rshare_buf_ptr(gbuf, &ptr, NULL));
	CHECK(memcmp(ptr, "by name", 8) == 0);
	CHECK_OK(rshare_buf_unimport(gbuf));
	CHECK_OK(rshare_pd_unimport(gpd));
	CHECK_OK(rshare_device_close(got));
	CHECK_OK(rshare_broker_withdraw(share));
	CHECK_OK(rshare_buf_free(buf));
	CHECK_OK(rshare_broker_stop(b));
	close(p[0]);
	close(p[1]);
	snprintf(ep, sizeof(ep), "%s/b.sock.lock", dir);
	unlink(ep);
	rmdir(dir);
}

/* Every case: sim0, a PD and a BUF_LEN buffer on it (its first half
 * written i * 7), its fd, borrowed MR and blobs; the teardown frees what
 * the case left and checks that no fd leaked. */
static rshare_device *dev;
static rshare_pd *pd;
static rshare_buf *buf; /* NULL once freed */
static rshare_mr *mr;
static unsigned char pd_blob[RSHARE_BLOB_MAX], blob[RSHARE_BLOB_MAX], *p;
static size_t plen, blen;
static uint64_t addr;
static uint32_t lkey, rkey;
static int fd, before;

static void setup(void)
{
	uint64_t length;
	uint32_t access, caps;
	size_t n;
	void *ptr;

	before = count_fds();
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	CHECK_OK(rshare_device_caps(dev, &caps));
	CHECK(caps & RSHARE_CAP_BUF);
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_buf_alloc(pd, BUF_LEN, ACCESS, &buf));
	REQUIRE_OK(rshare_buf_ptr(buf, &ptr, &n));
	CHECK(n == BUF_LEN);
	p = ptr;
	for (size_t i = 0; i < HALF; i++)
		p[i] = (unsigned char)(i * 7);
	REQUIRE_OK(rshare_buf_fd(buf, &fd));
	REQUIRE_OK(rshare_buf_mr(buf, &mr));
	REQUIRE_OK(rshare_mr_attrs(mr, &addr, &length, &lkey, &rkey, &access));
	CHECK(addr == (uint64_t)(uintptr_t)ptr && length == BUF_LEN && access == ACCESS);
	plen = export_pd(pd, pd_blob);
	REQUIRE_OK(rshare_buf_export(buf, blob, sizeof(blob), &blen));
}

static void teardown(void)
{
	if (buf)
		CHECK_OK(rshare_buf_free(buf));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
	CHECK(count_fds() == before);
}

/* The blob says what it is and which memory it names. */
static void case_blob_fields(void)
{
	struct stat st;
	uint64_t v;

	CHECK_OK(rshare_blob_field(blob, blen, RSHARE_FIELD_KIND, &v));
	CHECK(v == RSHARE_KIND_BUF);
	REQUIRE(fstat(fd, &st) == 0);
	CHECK_OK(rshare_blob_field(blob, blen, RSHARE_FIELD_MEM_INO, &v));
	CHECK(v == (uint64_t)st.st_ino);
	CHECK_OK(rshare_blob_field(blob, blen, RSHARE_FIELD_RKEY, &v));
	CHECK(v == rkey);
}

/* Done when: a forked child gets device, blob and fd in one message. */
static void case_another_process(void)
{
	unsigned char msg[2 * RSHARE_BLOB_MAX + 2];
	struct keys k;
	int sv[2], ok, ws;
	size_t n;
	pid_t pid;

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		exit(child(sv[1]));
	}
	close(sv[1]);
	n = pack(msg, pd_blob, plen, blob, blen);
	CHECK_OK(rshare_channel_sendv(sv[0], dev, &fd, 1, msg, n));
	CHECK(read(sv[0], &k, sizeof(k)) == (ssize_t)sizeof(k));
	CHECK(k.ok);
	/* The importer's MR is the allocator's: same keys, same address. */
	CHECK(k.lkey == lkey && k.rkey == rkey && k.addr == addr && k.length == BUF_LEN &&
	      k.access == ACCESS);
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	ok = 1;
	for (size_t i = HALF; i < BUF_LEN; i++)
		ok &= p[i] == (unsigned char)(i * 13);
	CHECK(ok); /* the child's write, in the parent's pages */
	close(sv[0]);
}

/* The borrowed MR and the PD are the buffer's while it lives. */
static void case_borrowed_mr(void)
{
	CHECK_ST(rshare_mr_dereg(mr), RSHARE_E_BUSY);
	CHECK_MSG("buffer");
	CHECK_ST(rshare_mr_unimport(mr), RSHARE_E_BUSY);
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK_ST(rshare_device_close(dev), RSHARE_E_BUSY);
}

static void case_wrong_fds(void)
{
	wrong_fds(dev, pd, blob, blen, fd);
}

/* An import made before the free keeps its memory after it; a late one
 * is refused; then stale, NULL and garbage arguments. */
static void case_free_then_not_found(void)
{
	rshare_buf *early, *late;
	unsigned char *q;
	uint64_t a;
	size_t n;
	void *ptr;
	int kept;

	p[HALF + 1] = 0x42;
	REQUIRE_OK(rshare_buf_import(pd, blob, blen, fd, &early));
	REQUIRE_OK(rshare_buf_ptr(early, &ptr, &n));
	q = ptr;
	CHECK(q != p && q[1] == 7 && q[HALF + 1] == 0x42);
	kept = dup(fd);
	REQUIRE(kept >= 0);
	CHECK_OK(rshare_buf_free(buf));
	/* Free deregistered for everyone: a late import is refused... */
	CHECK_ST(rshare_buf_import(pd, blob, blen, kept, &late), RSHARE_E_NOT_FOUND);
	/* ...and the memory lives while a mapping does. */
	q[3] = 0x5a;
	CHECK(q[3] == 0x5a && q[1] == 7);
	CHECK_ST(rshare_mr_attrs(mr, &a, NULL, NULL, NULL, NULL), RSHARE_E_STALE);
	bad_args(dev, pd, buf, blob, blen, kept);
	buf = NULL;
	CHECK_OK(rshare_buf_unimport(early));
	close(kept);
}

static void case_broker_carries_buffers(void)
{
	broker_carries_buffers(dev, pd);
}

#define T_PROGRAM_test_buf ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
