/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MRs and device memory through the hardware provider, and what the
 * device reports it can do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "hw_suite.h"

static uint32_t caps_of(rshare_device *dev)
{
	uint32_t caps = 0;

	CHECK_OK(rshare_device_caps(dev, &caps));
	return caps;
}

void case_caps(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(STANDIN_OTHER), *bare;
	/* Sharing MRs is what a shared buffer needs besides the core's memfd. */
	uint32_t base = RSHARE_CAP_PD | RSHARE_CAP_NATIVE | RSHARE_CAP_MR | RSHARE_CAP_BUF;

	/* The stand-in's libibverbs has MR (1.10) and DM (1.13) sharing; its
	 * libmlx5 has VAR sharing only as rdma-core 63. A context rshare
	 * opened has a ledger; one imported from a bare fd does not. */
	CHECK(caps_of(a) == (base | RSHARE_CAP_DM | RSHARE_CAP_DM_MAP | RSHARE_CAP_LEDGER |
			     (t->var_sharing ? RSHARE_CAP_VAR : 0)));
	bare = hw_import_dev(a);
	CHECK(caps_of(bare) == (base | RSHARE_CAP_DM | RSHARE_CAP_DM_MAP |
				(t->var_sharing ? RSHARE_CAP_VAR : 0)));
	CHECK_OK(rshare_device_close(bare));
	/* The other provider cannot import anything (libibverbs' dummy ops
	 * answer EOPNOTSUPP): no sharing capability at all. */
	CHECK(caps_of(c) == RSHARE_CAP_NATIVE);
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

void case_native(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	struct ibv_context *ib = NULL;
	struct ibv_pd *ibpd = NULL;
	rshare_pd *pd;
	uint32_t h;
	int fd;

	/* Borrowed rdma-core objects: the very ones rshare uses. */
	CHECK_OK(rshare_device_native(a, (void **)&ib));
	REQUIRE_OK(rshare_device_fd(a, &fd));
	CHECK(ib && ib->cmd_fd == fd);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	CHECK_OK(rshare_pd_native(pd, (void **)&ibpd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK(ibpd && ibpd->handle == h && ibpd->context == ib);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}

void case_mr_share(const struct hw_target *t)
{
	unsigned char pblob[RSHARE_BLOB_MAX], mblob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_pd *pd, *pdb;
	rshare_mr *mr, *copy = NULL, *again = NULL;
	struct ibv_mr *ibmr = NULL;
	uint64_t addr, length, addr2, length2;
	uint32_t lkey, rkey, access, lkey2, rkey2, access2;
	const uint32_t want = RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ;
	size_t plen, mlen;
	char *buf = calloc(1, 8192);

	REQUIRE(buf);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, pblob, sizeof(pblob), &plen));
	REQUIRE_OK(rshare_pd_import(b, pblob, plen, &pdb));
	/* Registered through the imported PD, so only the kernel knows a's
	 * PD has an MR. */
	REQUIRE_OK(rshare_mr_reg(pdb, buf, 8192, want, &mr));
	CHECK_OK(rshare_mr_attrs(mr, &addr, &length, &lkey, &rkey, &access));
	CHECK(addr == (uintptr_t)buf && length == 8192 && access == want);
	CHECK_OK(rshare_mr_native(mr, (void **)&ibmr));
	CHECK(ibmr && ibmr->lkey == lkey && ibmr->rkey == rkey);
	REQUIRE_OK(rshare_mr_export(mr, mblob, sizeof(mblob), &mlen));
	/* The kernel's rule: remote write needs local write. */
	CHECK_ST(rshare_mr_reg(pdb, buf, 4096, RSHARE_ACCESS_REMOTE_WRITE, &again),
		 RSHARE_E_INVAL);
	CHECK(rshare_last_errno() == EINVAL && again == NULL);

	CHECK_OK(rshare_mr_import(pd, mblob, mlen, &copy));
	CHECK_OK(rshare_mr_attrs(copy, &addr2, &length2, &lkey2, &rkey2, &access2));
	CHECK(lkey2 == lkey && rkey2 == rkey && length2 == length && access2 == want);
	CHECK(addr2 == addr); /* the registering process's address, as carried */
	CHECK_OK(rshare_mr_unimport(copy));

	/* The kernel's rule: a PD with MRs cannot be destroyed. */
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK(rshare_last_errno() == EBUSY);
	CHECK_MSG("in use");
	CHECK_OK(rshare_mr_dereg(mr));
	/* Deregistered: the blob names nothing now. */
	CHECK_ST(rshare_mr_import(pd, mblob, mlen, &again), RSHARE_E_NOT_FOUND);
	CHECK(again == NULL);
	CHECK_OK(rshare_pd_unimport(pdb));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
	free(buf);
}

void case_mr_handle_reused(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *pd;
	rshare_mr *m1, *m2, *wrong = NULL;
	uint32_t h1, h2, k1, k2;
	size_t len;
	char *buf = calloc(1, 4096);

	REQUIRE(buf);
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_mr_reg(pd, buf, 4096, RSHARE_ACCESS_LOCAL_WRITE, &m1));
	REQUIRE_OK(rshare_mr_export(m1, blob, sizeof(blob), &len));
	CHECK_OK(rshare_mr_handle(m1, &h1));
	CHECK_OK(rshare_mr_attrs(m1, NULL, NULL, &k1, NULL, NULL));
	CHECK_OK(rshare_mr_dereg(m1));
	/* Same memory, size class and access: mlx5's mkey cache hands the
	 * same mkey back, so handle, keys and length all match. Only the
	 * ledger (the dereg went through rshare) tells the MRs apart. */
	REQUIRE_OK(rshare_mr_reg(pd, buf, 4096, RSHARE_ACCESS_LOCAL_WRITE, &m2));
	CHECK_OK(rshare_mr_handle(m2, &h2));
	CHECK_OK(rshare_mr_attrs(m2, NULL, NULL, &k2, NULL, NULL));
	CHECK(h2 == h1 && k2 == k1);
	CHECK_ST(rshare_mr_import(pd, blob, len, &wrong), RSHARE_E_NOT_FOUND);
	CHECK_MSG("freed since this blob was made");
	CHECK(wrong == NULL);
	CHECK_OK(rshare_mr_dereg(m2));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
	free(buf);
}

/* Device memory is the device's, not the process's: 4-byte words (mlx5
 * serves its mapping in words, as upstream's own copy loop does). */
static void words_to(void *dm, const void *src, size_t len)
{
	volatile uint32_t *d = dm;
	uint32_t w;

	for (size_t i = 0; i < len / 4; i++) {
		memcpy(&w, (const char *)src + 4 * i, 4);
		d[i] = w;
	}
}

static void words_from(void *dst, const void *dm, size_t len)
{
	const volatile uint32_t *s = dm;
	uint32_t w;

	for (size_t i = 0; i < len / 4; i++) {
		w = s[i];
		memcpy((char *)dst + 4 * i, &w, 4);
	}
}

void case_dm_share(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_dm *dm, *copy = NULL, *again = NULL;
	struct ibv_dm *ibdm = NULL;
	char got[16] = "";
	uint64_t length = 0;
	uint32_t h;
	size_t len;

	REQUIRE_OK(rshare_dm_alloc(a, 1000, &dm));
	CHECK_OK(rshare_dm_length(dm, &length));
	CHECK(length == 1000);
	CHECK_OK(rshare_dm_handle(dm, &h));
	CHECK_OK(rshare_dm_native(dm, (void **)&ibdm));
	CHECK(ibdm && ibdm->handle == h);
	CHECK_OK(rshare_dm_read(dm, 0, got, sizeof(got)));
	if (t->standin) /* the stand-in hands memory out zeroed */
		CHECK(memcmp(got, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) == 0);
	CHECK_OK(rshare_dm_write(dm, 988, "0123456789AB", 12));
	CHECK_ST(rshare_dm_write(dm, 992, "0123456789AB", 12), RSHARE_E_INVAL);
	/* mlx5 copies whole 4-byte words only. */
	CHECK_ST(rshare_dm_write(dm, 2, "0123", 4), RSHARE_E_INVAL);
	CHECK(rshare_last_errno() == EINVAL);
	CHECK_MSG("multiples of 4");
	CHECK_ST(rshare_dm_read(dm, 0, got, 6), RSHARE_E_INVAL);
	if (caps_of(a) & RSHARE_CAP_DM_MAP) { /* mlx5's own mapping of the DM */
		void *addr = NULL, *same = NULL;

		CHECK_OK(rshare_dm_unmap(dm)); /* nothing mapped: a no-op */
		REQUIRE_OK(rshare_dm_map(dm, &addr));
		CHECK(addr != NULL);
		CHECK_OK(rshare_dm_map(dm, &same));
		CHECK(same == addr);
		{
			char w[12];

			words_from(w, (char *)addr + 988, sizeof(w));
			CHECK(memcmp(w, "0123456789AB", 12) == 0);
		}
		CHECK_OK(rshare_dm_unmap(dm));
		CHECK_OK(rshare_dm_map(dm, &same));
		CHECK(same == addr); /* the provider's mapping, not a new one */
	}
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));

	/* Another context of the table reads what a wrote, and back. */
	REQUIRE_OK(rshare_dm_import(b, blob, len, &copy));
	CHECK_OK(rshare_dm_read(copy, 988, got, 12));
	CHECK(memcmp(got, "0123456789AB", 12) == 0);
	CHECK_OK(rshare_dm_write(copy, 0, "from b!\0", 8));
	CHECK_OK(rshare_dm_read(dm, 0, got, 8));
	CHECK(memcmp(got, "from b!", 8) == 0);
	if (caps_of(b) & RSHARE_CAP_DM_MAP) { /* mlx5 maps an imported DM too */
		void *pa = NULL, *pb = NULL;

		REQUIRE_OK(rshare_dm_map(dm, &pa));
		REQUIRE_OK(rshare_dm_map(copy, &pb));
		CHECK(pa != pb);
		words_to((char *)pb + 512, "mapped b", 8);
		words_from(got, (char *)pa + 512, 8);
		CHECK(memcmp(got, "mapped b", 8) == 0);
		CHECK_OK(rshare_dm_read(dm, 512, got, 8));
		CHECK(memcmp(got, "mapped b", 8) == 0);
	}
	CHECK_OK(rshare_dm_unimport(copy));

	CHECK_OK(rshare_dm_free(dm));
	CHECK_ST(rshare_dm_import(b, blob, len, &again), RSHARE_E_NOT_FOUND);
	CHECK_MSG("ibv_import_dm");
	CHECK(again == NULL);
	/* More than the device's max_dm_size: INVAL naming it, before
	 * rdma-core (mlx5_alloc_dm answers EINVAL for it too). */
	if (t->standin) {
		CHECK_ST(rshare_dm_alloc(a, 1u << 30, &again), RSHARE_E_INVAL);
		CHECK_MSG("max_dm_size");
	} else
		CHECK(rshare_dm_alloc(a, 1ull << 40, &again) != RSHARE_OK);
	CHECK(again == NULL);
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* A mapping kept by an importer outlives the DM's free by another handle:
 * its bytes stay readable and writable, and the device hands that memory
 * to no new DM while the mapping lives (the kernel frees it at the last
 * unmap); once unmapped, a free import is refused. */
void case_dm_map_outlives_free(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_dm *dm, *copy, *fresh[3] = { NULL, NULL, NULL }, *late = NULL;
	char got[16] = "";
	void *q = NULL;
	size_t len;
	int n;

	REQUIRE_OK(rshare_dm_alloc(a, 4096, &dm));
	CHECK_OK(rshare_dm_write(dm, 0, "before the free", 16));
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_dm_import(b, blob, len, &copy));
	REQUIRE_OK(rshare_dm_map(copy, &q));
	CHECK_OK(rshare_dm_free(dm));
	words_from(got, q, sizeof(got));
	CHECK(memcmp(got, "before the free", 16) == 0);
	/* New device memory, filled: none of it is the freed DM's. */
	for (n = 0; n < 3 && rshare_dm_alloc(a, 4096, &fresh[n]) == RSHARE_OK; n++)
		CHECK_OK(rshare_dm_write(fresh[n], 0, "fresh device mem", 16));
	CHECK(n > 0);
	words_from(got, q, sizeof(got));
	CHECK(memcmp(got, "before the free", 16) == 0);
	words_to(q, "still mine, here", 16);
	words_from(got, q, sizeof(got));
	CHECK(memcmp(got, "still mine, here", 16) == 0);
	for (int i = 0; i < n; i++) {
		CHECK_OK(rshare_dm_read(fresh[i], 0, got, sizeof(got)));
		CHECK(memcmp(got, "fresh device mem", 16) == 0);
		CHECK_OK(rshare_dm_free(fresh[i]));
	}
	CHECK_OK(rshare_dm_unimport(copy)); /* the last mapping */
	CHECK_ST(rshare_dm_import(b, blob, len, &late), RSHARE_E_NOT_FOUND);
	CHECK(late == NULL);
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* A forked child shares the parent's DM mappings (the kernel counts the
 * copies); unimporting the DMs it inherited unmaps its copies only. The parent's mappings keep counting: an
 * importer's mapping still outlives the free, and the freed memory goes to
 * no new DM while it lives. */
void case_dm_map_fork(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_dm *dm, *copy, *fresh[3] = { NULL, NULL, NULL };
	char got[16] = "";
	void *q = NULL;
	size_t len;
	int pid, st = 0, n;

	REQUIRE_OK(rshare_dm_alloc(a, 4096, &dm));
	CHECK_OK(rshare_dm_write(dm, 0, "before the fork", 16));
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_dm_import(b, blob, len, &copy));
	REQUIRE_OK(rshare_dm_map(copy, &q));
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) /* the inherited copies go here, their mappings unmapped */
		_exit(rshare_dm_unimport(copy) != RSHARE_OK || rshare_dm_unimport(dm) != RSHARE_OK);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_OK(rshare_dm_free(dm));
	for (n = 0; n < 3 && rshare_dm_alloc(a, 4096, &fresh[n]) == RSHARE_OK; n++)
		CHECK_OK(rshare_dm_write(fresh[n], 0, "fresh device mem", 16));
	CHECK(n > 0);
	words_from(got, q, sizeof(got));
	CHECK(memcmp(got, "before the fork", 16) == 0);
	for (int i = 0; i < n; i++)
		CHECK_OK(rshare_dm_free(fresh[i]));
	CHECK_OK(rshare_dm_unimport(copy));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

void case_dm_not_mlx5(const struct hw_target *t)
{
	rshare_device *c = hw_open_dev(STANDIN_OTHER), *a;
	rshare_dm *dm = NULL;

	/* An mlx5 function without on-chip memory: max_dm_size is 0, mlx5
	 * answers EINVAL for any size, rshare says why and reports no DM. */
	hw_hook("STANDIN_MAX_DM_SIZE", "0");
	a = hw_open_dev(t->name);
	hw_hook("STANDIN_MAX_DM_SIZE", NULL);
	CHECK(!(caps_of(a) & (RSHARE_CAP_DM | RSHARE_CAP_DM_MAP)));
	CHECK_ST(rshare_dm_alloc(a, 64, &dm), RSHARE_E_UNSUPPORTED);
	CHECK_MSG("max_dm_size is 0");
	CHECK(dm == NULL);
	CHECK_OK(rshare_device_close(a));
	/* No alloc_dm op in its verbs_context: verbs.h's inline says
	 * EOPNOTSUPP. */
	CHECK_ST(rshare_dm_alloc(c, 64, &dm), RSHARE_E_UNSUPPORTED);
	CHECK(rshare_last_errno() == EOPNOTSUPP);
	CHECK_MSG("lacks device memory");
	CHECK(dm == NULL);
	CHECK_OK(rshare_device_close(c));
}

/* Mapped device memory across processes: the parent maps a DM and stores
 * into it; a child (fork + exec) that received the device over a channel
 * imports the DM, maps it itself and loads the parent's bytes (and reads
 * them with rshare_dm_read), stores its own, and the parent loads them
 * through its mapping. A second child, whose libmlx5 cannot be loaded,
 * is told why it cannot map and still reads the bytes with
 * rshare_dm_read. */
void case_xproc_dm_map(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name);
	char want[64] = "", got[64] = "", reply[16] = "";
	rshare_dm *dm;
	void *p = NULL;
	size_t len;
	int sock, pid, n;

	REQUIRE_OK(rshare_dm_alloc(a, 512, &dm));
	REQUIRE_OK(rshare_dm_map(dm, &p));
	snprintf(want, sizeof(want), "mapped by parent %d", (int)getpid());
	words_to(p, want, sizeof(want));
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));

	pid = spawn_child(t, "child-dmmap", NULL, &sock);
	CHECK_OK(rshare_channel_send(sock, a, blob, len));
	n = (int)read(sock, reply, sizeof(reply) - 1);
	close(sock);
	CHECK(reap_child(pid));
	CHECK(n > 0 && strncmp(reply, "done", 4) == 0);

	memset(want, 0, sizeof(want));
	snprintf(want, sizeof(want), "mapped by child %d", pid);
	words_from(got, (char *)p + 256, sizeof(got));
	CHECK(strcmp(got, want) == 0);

	pid = spawn_child(t, "child-dmnomap", "RSHARE_LIBMLX5=/nonexistent/libmlx5.so.1", &sock);
	CHECK_OK(rshare_channel_send(sock, a, blob, len));
	n = (int)read(sock, reply, sizeof(reply) - 1);
	close(sock);
	CHECK(reap_child(pid));
	CHECK(n > 0 && strncmp(reply, "done", 4) == 0);
	CHECK_OK(rshare_dm_free(dm)); /* unmaps it too */
	CHECK_OK(rshare_device_close(a));
}

int child_dmmap(int sock)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char want[64] = "", got[64] = "";
	rshare_device *dev = NULL;
	rshare_dm *dm = NULL;
	uint32_t caps = 0;
	void *q = NULL;
	size_t len = 0;

	REQUIRE_OK(rshare_channel_recv(sock, &dev, blob, sizeof(blob), &len));
	CHECK_OK(rshare_device_caps(dev, &caps));
	CHECK(caps & RSHARE_CAP_DM_MAP);
	REQUIRE_OK(rshare_dm_import(dev, blob, len, &dm));
	REQUIRE_OK(rshare_dm_map(dm, &q));
	snprintf(want, sizeof(want), "mapped by parent %d", (int)getppid());
	words_from(got, q, sizeof(got));
	CHECK(strcmp(got, want) == 0);
	memset(got, 0, sizeof(got));
	CHECK_OK(rshare_dm_read(dm, 0, got, sizeof(got)));
	CHECK(strcmp(got, want) == 0);
	memset(want, 0, sizeof(want));
	snprintf(want, sizeof(want), "mapped by child %d", (int)getpid());
	words_to((char *)q + 256, want, sizeof(want));
	CHECK_OK(rshare_dm_unimport(dm)); /* unmaps it too */
	CHECK_OK(rshare_device_close(dev));
	CHECK(write(sock, "done\n", 5) == 5);
	printf("child %d: %d passed, %d failed\n", (int)getpid(), t_pass, t_fail);
	return t_fail ? 1 : 0;
}

/* Without libmlx5 (RSHARE_LIBMLX5 names a missing file): the DM is shared
 * all the same, but not mapped, and the status says why. */
int child_dmnomap(int sock)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char want[64] = "", got[64] = "";
	rshare_device *dev = NULL;
	rshare_dm *dm = NULL;
	uint32_t caps = 0;
	void *q = got;
	size_t len = 0;

	REQUIRE_OK(rshare_channel_recv(sock, &dev, blob, sizeof(blob), &len));
	CHECK_OK(rshare_device_caps(dev, &caps));
	CHECK((caps & RSHARE_CAP_DM) && !(caps & RSHARE_CAP_DM_MAP));
	REQUIRE_OK(rshare_dm_import(dev, blob, len, &dm));
	CHECK_ST(rshare_dm_map(dm, &q), RSHARE_E_UNSUPPORTED);
	CHECK_MSG("only mlx5 maps it");
	CHECK_MSG("/nonexistent/libmlx5.so.1");
	CHECK(q == got);
	snprintf(want, sizeof(want), "mapped by parent %d", (int)getppid());
	CHECK_OK(rshare_dm_read(dm, 0, got, sizeof(got)));
	CHECK(strcmp(got, want) == 0);
	CHECK_OK(rshare_dm_unimport(dm));
	CHECK_OK(rshare_device_close(dev));
	CHECK(write(sock, "done\n", 5) == 5);
	printf("child %d: %d passed, %d failed\n", (int)getpid(), t_pass, t_fail);
	return t_fail ? 1 : 0;
}
