/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Imports look objects up without the table lock (sim_lookup). An honest
 * free and re-create of the same handle racing such a lookup must never
 * hand back a copy that mixes the two objects: an import of the old blob
 * answers OK with the old object whole, or NOT_FOUND, never BLOB_CORRUPT.
 *
 * The parent registers an MR, sends its blob (and what it says) to a child,
 * waits until the child has begun importing it in a loop, then deregisters
 * it and registers the next MR, with other attributes, in the same handle.
 * The child imports the old blob until the table says NOT_FOUND. In case
 * lookup_race the child adopts the device afresh each round, so its first
 * lookups read the table by pread and the later ones through its mapping:
 * both paths race; in lookup_race_mapped it keeps one context, so nearly
 * every lookup goes through the mapping.
 */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define RACE_SECONDS 2
#define MAX_ROUNDS 100000
/* How long the child imports one blob before it gives up on the parent's
 * free: long, as a loaded machine may not run the parent for a while. */
#define GIVE_UP_SECONDS 30

struct round_msg {
	uint64_t addr, length;
	size_t len;
	unsigned char blob[RSHARE_BLOB_MAX];
};

static void send_fd(int sock, int fd, const void *data, size_t len)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	REQUIRE(sendmsg(sock, &msg, 0) == (ssize_t)len);
}

static int recv_fd(int sock, void *data, size_t cap)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = data, .iov_len = cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	int fd = -1;

	if (recvmsg(sock, &msg, 0) <= 0)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One round in the child: import the old MR's blob until it is gone,
 * through the context dev. Returns the number of failed expectations. */
static int child_round(rshare_device *dev, const unsigned char *pdb, size_t pdl,
		       const struct round_msg *r, int sock, unsigned long *oks)
{
	rshare_pd *pd;
	rshare_mr *mr;
	uint64_t addr, length;
	uint32_t lkey, rkey, access;
	int bad = 0, status = RSHARE_OK;
	double give_up = now() + GIVE_UP_SECONDS;

	if (rshare_pd_import(dev, pdb, pdl, &pd)) {
		fprintf(stderr, "child: cannot import the PD: %s\n", rshare_last_error());
		return 1;
	}
	for (long i = 0; (i & 1023) || now() < give_up; i++) {
		status = rshare_mr_import(pd, r->blob, r->len, &mr);
		if (i == 0 && write(sock, "a", 1) != 1)
			bad++;
		if (status != RSHARE_OK)
			break;
		/* OK only for the object the blob names, whole. */
		if (rshare_mr_attrs(mr, &addr, &length, &lkey, &rkey, &access) ||
		    addr != r->addr || length != r->length) {
			fprintf(stderr, "child: imported MR is not the blob's\n");
			bad++;
		}
		bad += rshare_mr_unimport(mr) != RSHARE_OK;
		++*oks;
	}
	if (status != RSHARE_E_NOT_FOUND) {
		fprintf(stderr, "child: import of a freed MR's blob: %s (%s), want NOT_FOUND\n",
			rshare_status_name(status), rshare_last_error());
		bad++;
	}
	bad += rshare_pd_unimport(pd) != RSHARE_OK;
	return bad;
}

/* A context of the table fd, or NULL (said why). */
static rshare_device *adopt(int fd)
{
	rshare_device *dev;

	if (rshare_device_import(fd, &dev)) {
		fprintf(stderr, "child: cannot adopt the device: %s\n", rshare_last_error());
		return NULL;
	}
	return dev;
}

/* fresh: a new context each round (its first lookups by pread, the later
 * ones through the mapping); else one context for every round, mapped
 * after its first few lookups. */
static int child_main(int sock, int fresh)
{
	unsigned char pdb[RSHARE_BLOB_MAX];
	struct round_msg r;
	unsigned long rounds = 0, oks = 0;
	int bad = 0, fd = recv_fd(sock, pdb, sizeof(pdb));
	rshare_device *kept = NULL, *dev;
	ssize_t n;
	size_t pdl;

	if (fd < 0 || read(sock, &pdl, sizeof(pdl)) != (ssize_t)sizeof(pdl))
		return 100;
	if (!fresh && !(kept = adopt(fd)))
		return 1;
	while ((n = read(sock, &r, sizeof(r))) == (ssize_t)sizeof(r)) {
		dev = kept ? kept : adopt(fd);
		if (!dev)
			return 1;
		bad += child_round(dev, pdb, pdl, &r, sock, &oks);
		if (!kept)
			bad += rshare_device_close(dev) != RSHARE_OK;
		rounds++;
		if (bad)
			break;
	}
	if (kept)
		bad += rshare_device_close(kept) != RSHARE_OK;
	fprintf(stderr, "child: %lu rounds, %lu imports of a live MR\n", rounds, oks);
	if (oks == 0)
		bad++; /* the race never had a live side */
	close(fd);
	return bad > 99 ? 99 : bad;
}

static void lookup_race(int fresh)
{
	static char mem[64 * 1024];
	unsigned char pdb[RSHARE_BLOB_MAX];
	struct round_msg r;
	rshare_device *dev;
	rshare_pd *pd;
	rshare_mr *mr;
	uint32_t h, first_h = UINT32_MAX;
	int sv[2], fd, status, rounds = 0;
	size_t pdl;
	double end;
	char ack;
	pid_t pid;

	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	pid = fork(); /* before any library use: the child adopts the table fresh */
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(child_main(sv[1], fresh));
	}
	close(sv[1]);
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	pdl = export_pd(pd, pdb);
	send_fd(sv[0], fd, pdb, sizeof(pdb));
	REQUIRE(write(sv[0], &pdl, sizeof(pdl)) == (ssize_t)sizeof(pdl));

	end = now() + RACE_SECONDS;
	for (; rounds < MAX_ROUNDS && now() < end; rounds++) {
		/* Every round's MR differs from the last in address, length
		 * and access, so a mixed copy cannot pass for either. */
		r.addr = (uint64_t)(uintptr_t)(mem + (rounds % 16) * 64);
		r.length = 4096 + (uint64_t)(rounds % 5) * 128 + (rounds & 1) * 64;
		REQUIRE_OK(rshare_mr_reg(pd, (void *)(uintptr_t)r.addr, r.length,
					 rounds & 1 ? RSHARE_ACCESS_LOCAL_WRITE :
						      RSHARE_ACCESS_REMOTE_READ, &mr));
		CHECK_OK(rshare_mr_handle(mr, &h));
		if (first_h == UINT32_MAX)
			first_h = h;
		if (h != first_h) {
			CHECK(h == first_h); /* the same handle every round */
			break;
		}
		REQUIRE_OK(rshare_mr_export(mr, r.blob, sizeof(r.blob), &r.len));
		REQUIRE(write(sv[0], &r, sizeof(r)) == (ssize_t)sizeof(r));
		if (read(sv[0], &ack, 1) != 1) {
			CHECK(!"the child stopped");
			break;
		}
		/* The child is importing the blob now: free the MR under it
		 * (the next round re-creates the handle). */
		CHECK_OK(rshare_mr_dereg(mr));
	}
	shutdown(sv[0], SHUT_WR);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	printf("%d rounds of free and re-create under the child's imports\n", rounds);
	CHECK(rounds > 0);
	close(sv[0]);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* The child adopts the table afresh each round: pread and mapped lookups. */
static void case_lookup_race(void)
{
	lookup_race(1);
}

/* The child keeps one context: its lookups go through the mapping. */
static void case_lookup_race_mapped(void)
{
	lookup_race(0);
}

#define T_PROGRAM_test_sim_race ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(NULL, NULL)
