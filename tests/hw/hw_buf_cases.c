/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared buffers through the hardware provider (since 1.2): the allocator
 * registers its mapping of the memfd with ibv_reg_mr, an importer maps the
 * same pages and imports the MR with ibv_import_mr: same keys, same
 * registered address, the memory written by one read by the other; free
 * deregisters for everyone.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "hw_suite.h"

void case_buf_share(const struct hw_target *t)
{
	unsigned char pblob[RSHARE_BLOB_MAX], bblob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = hw_import_dev(a);
	rshare_pd *pd, *pdb;
	rshare_buf *buf, *copy, *late = NULL;
	rshare_mr *mr, *mr2;
	struct ibv_mr *ibmr = NULL, *ibmr2 = NULL;
	uint64_t addr, addr2, len64;
	uint32_t lkey, rkey, lkey2, rkey2;
	size_t plen, blen, n;
	void *p, *q, *hole;
	int fd;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, pblob, sizeof(pblob), &plen));
	REQUIRE_OK(rshare_pd_import(b, pblob, plen, &pdb));
	REQUIRE_OK(rshare_buf_alloc(pd, 3 * 4096 + 100, RSHARE_ACCESS_LOCAL_WRITE |
				    RSHARE_ACCESS_REMOTE_WRITE, &buf));
	REQUIRE_OK(rshare_buf_ptr(buf, &p, &n));
	REQUIRE_OK(rshare_buf_mr(buf, &mr));
	CHECK_OK(rshare_mr_attrs(mr, &addr, &len64, &lkey, &rkey, NULL));
	/* ibv_reg_mr over this process's mapping of the memfd. */
	CHECK_OK(rshare_mr_native(mr, (void **)&ibmr));
	CHECK(ibmr && ibmr->addr == p && ibmr->length == n && ibmr->lkey == lkey);
	CHECK(addr == (uintptr_t)p && len64 == n);
	REQUIRE_OK(rshare_buf_export(buf, bblob, sizeof(bblob), &blen));
	REQUIRE_OK(rshare_buf_fd(buf, &fd));

	/* ibv_import_mr into the importing context's PD, the same pages. */
	REQUIRE_OK(rshare_buf_import(pdb, bblob, blen, fd, &copy));
	CHECK_OK(rshare_buf_ptr(copy, &q, NULL));
	CHECK_OK(rshare_buf_mr(copy, &mr2));
	CHECK_OK(rshare_mr_attrs(mr2, &addr2, NULL, &lkey2, &rkey2, NULL));
	CHECK_OK(rshare_mr_native(mr2, (void **)&ibmr2));
	CHECK(ibmr2 && ibmr2 != ibmr && ibmr2->lkey == lkey);
	CHECK(lkey2 == lkey && rkey2 == rkey && addr2 == addr);
	CHECK(q != p);
	memcpy(q, "through the importer", 21);
	CHECK(memcmp(p, "through the importer", 21) == 0);
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK_OK(rshare_buf_unimport(copy));

	/* What the registration pins must be mapped (the kernel's EFAULT). */
	hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(hole != MAP_FAILED);
	munmap(hole, 4096);
	CHECK_ST(rshare_mr_reg(pd, hole, 4096, RSHARE_ACCESS_LOCAL_WRITE, &mr2), RSHARE_E_INVAL);
	CHECK(rshare_last_errno() == EFAULT);

	/* Free deregisters: a late import is refused by the kernel's lookup
	 * (the memory itself lives on in the fd kept here). */
	fd = dup(fd);
	REQUIRE(fd >= 0);
	CHECK_OK(rshare_buf_free(buf));
	CHECK_ST(rshare_buf_import(pdb, bblob, blen, fd, &late), RSHARE_E_NOT_FOUND);
	CHECK(late == NULL);
	close(fd);
	CHECK_OK(rshare_pd_unimport(pdb));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

/* A context with a ledger and a buffer's memfd in one message: the
 * device's two fds (command fd, ledger) and the extra fd are told apart
 * by the count of extra fds (channel header, publish body) and the
 * attach reply's LEDGER flag. */
void case_buf_with_ledger(const struct hw_target *t)
{
	char dir[] = "/tmp/rshare-hw-bufledger-XXXXXX", endpoint[108], lock[160];
	rshare_device *a = hw_open_dev(t->name), *d = NULL;
	rshare_broker *br = NULL;
	rshare_share *sh = NULL;
	rshare_pd *pd;
	rshare_buf *buf;
	struct stat want, st;
	uint32_t caps = 0;
	size_t n = 0, len = 0;
	int sv[2], fd, got[2] = { -1, -1 };

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_buf_alloc(pd, 4096, RSHARE_ACCESS_LOCAL_WRITE, &buf));
	REQUIRE_OK(rshare_buf_fd(buf, &fd));
	REQUIRE(fstat(fd, &want) == 0);

	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK_OK(rshare_channel_sendv(sv[0], a, &fd, 1, NULL, 0));
	CHECK_OK(rshare_channel_recvv(sv[1], &d, got, 2, &n, NULL, 0, &len));
	CHECK(n == 1 && got[0] >= 0 && fstat(got[0], &st) == 0 && st.st_ino == want.st_ino);
	CHECK_OK(rshare_device_caps(d, &caps));
	CHECK(caps & RSHARE_CAP_LEDGER); /* the second fd went to the device */
	CHECK_OK(rshare_device_close(d));
	close(got[0]);
	close(sv[0]);
	close(sv[1]);

	REQUIRE(mkdtemp(dir));
	snprintf(endpoint, sizeof(endpoint), "%s/broker.sock", dir);
	REQUIRE_OK(rshare_broker_start(endpoint, &br));
	REQUIRE_OK(rshare_broker_publishv(endpoint, "hw/bufledger", a, &fd, 1, NULL, 0, NULL,
					  &sh));
	d = NULL;
	got[0] = -1;
	n = 0;
	CHECK_OK(rshare_broker_attachv(endpoint, "hw/bufledger", 0, &d, got, 2, &n, NULL, 0,
				       &len));
	CHECK(n == 1 && got[0] >= 0 && fstat(got[0], &st) == 0 && st.st_ino == want.st_ino);
	caps = 0;
	CHECK(d && rshare_device_caps(d, &caps) == RSHARE_OK && (caps & RSHARE_CAP_LEDGER));
	if (d)
		CHECK_OK(rshare_device_close(d));
	if (got[0] >= 0)
		close(got[0]);
	CHECK_OK(rshare_broker_withdraw(sh));
	CHECK_OK(rshare_broker_stop(br));
	snprintf(lock, sizeof(lock), "%s.lock", endpoint);
	unlink(lock);
	unlink(endpoint);
	CHECK(rmdir(dir) == 0);
	CHECK_OK(rshare_buf_free(buf));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}
