/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Helpers shared by the broker tests: a private directory for sockets, a
 * publish of a fresh PD + VAR, raw protocol messages for hostile clients. */
#ifndef RSHARE_TEST_BROKER_UTIL_H
#define RSHARE_TEST_BROKER_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* A fresh directory (0755, so that other uids can reach a socket in it)
 * and a socket path inside it. */
static inline void make_endpoint(char *dir, size_t dcap, char *path, size_t pcap)
{
	snprintf(dir, dcap, "/tmp/rshare-test-XXXXXX");
	REQUIRE(mkdtemp(dir) != NULL);
	REQUIRE(chmod(dir, 0755) == 0);
	snprintf(path, pcap, "%s/b.sock", dir);
}

/* A share's objects, as its publisher holds them. */
struct pub {
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	unsigned char payload[2 * RSHARE_BLOB_MAX];
	size_t len;
};

static inline void pub_make(struct pub *p)
{
	REQUIRE_OK(rshare_device_open("sim0", &p->dev));
	REQUIRE_OK(rshare_pd_alloc(p->dev, &p->pd));
	REQUIRE_OK(rshare_var_alloc(p->dev, 0, &p->var));
	p->len = export_pd(p->pd, p->payload);
	p->len += export_var(p->var, p->payload + p->len);
}

static inline void pub_free(struct pub *p)
{
	CHECK_OK(rshare_var_free(p->var));
	CHECK_OK(rshare_pd_free(p->pd));
	CHECK_OK(rshare_device_close(p->dev));
}

static inline int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
	REQUIRE(s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return s;
}

/* Send msg with up to 8 fds (SCM_RIGHTS) on s, as a hostile client would;
 * sendmsg's result. */
static inline int send_fds(int s, const void *msg, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr a;
		char buf[CMSG_SPACE(8 * sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)msg, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *cm;
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return (int)sendmsg(s, &m, MSG_NOSIGNAL);
}

/* The status of the broker's reply on s (INT32_MIN if none within 5 s). */
static inline int32_t raw_reply_status(int s)
{
	struct timeval tv = { .tv_sec = 5 };
	unsigned char buf[1024];
	ssize_t r;
	int32_t st;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	r = recv(s, buf, sizeof(buf), 0);
	if (r < 16 || memcmp(buf, "RSBK", 4) != 0)
		return INT32_MIN;
	memcpy(&st, buf + 12, 4);
	return st;
}

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A TCP socket on loopback whose close() waits linger_s seconds: its peer
 * (in the backlog of *listener, never accepted) reads nothing, so the send
 * queue stays full and the FIN never goes. */
static inline int linger_fd(int *listener, int linger_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { 1, linger_s };
	socklen_t n = sizeof(sa);
	int small = 4096, s;
	char junk[65536] = { 0 };

	*listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(*listener >= 0);
	setsockopt(*listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	REQUIRE(bind(*listener, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		getsockname(*listener, (struct sockaddr *)&sa, &n) == 0 && listen(*listener, 4) == 0);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	while (send(s, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
		;
	REQUIRE(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	return s;
}

#endif
