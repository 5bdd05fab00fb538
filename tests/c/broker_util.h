/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Helpers shared by the broker tests (test_broker*, stress_broker): a
 * private directory for sockets, a publish of a fresh PD + VAR, brokers and
 * other parties in child processes, raw protocol messages for hostile
 * clients and hostile brokers (written byte by byte here, not with the
 * library's encoder, so that the tests check the wire format too). */
#ifndef RSHARE_TEST_BROKER_UTIL_H
#define RSHARE_TEST_BROKER_UTIL_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* An honest publish of a fresh PD + VAR as name at the broker at path, an
 * attach of it and its withdrawal: each step CHECKed (the broker serves). */
static inline void honest_share(const char *path, const char *name)
{
	unsigned char got[2 * RSHARE_BLOB_MAX];
	rshare_device *d = NULL;
	rshare_share *sh = NULL;
	struct pub p;
	size_t n;

	pub_make(&p);
	CHECK_OK(rshare_broker_publish(path, name, p.dev, p.payload, p.len, NULL, &sh));
	CHECK_OK(rshare_broker_attach(path, name, 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
}

/* A connection to the socket at path, or -1 with errno (a stress client
 * goes on); flags: SOCK_NONBLOCK for a connect that fails with EAGAIN
 * rather than wait while the listener's queue is full. */
static inline int try_connect_flags(const char *path, int flags)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = errno;

		close(s);
		errno = err;
		return -1;
	}
	return s;
}

static inline int try_connect(const char *path)
{
	return try_connect_flags(path, 0);
}

static inline int raw_connect(const char *path)
{
	int s = try_connect(path);

	REQUIRE(s >= 0);
	return s;
}

/* A listening socket at at (a stale one there removed) whose queue holds
 * backlog + 1 connections not yet accepted: a hostile or stuck broker. */
static inline int raw_listen_backlog(const char *at, int backlog)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	unlink(at);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", at);
	REQUIRE(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		listen(l, backlog) == 0);
	return l;
}

static inline int raw_listen(const char *at)
{
	return raw_listen_backlog(at, 8);
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

/* Request types and header flags (docs/broker.md). */
enum { RAW_PUBLISH = 1, RAW_ATTACH = 2, RAW_LIST = 4, RAW_REPLY = 0x80 };

/* A 16-byte header: "RSBK", version 1, type, flags, body length, status 0. */
static inline void raw_header(unsigned char *m, int type, int flags, uint32_t len)
{
	memcpy(m, "RSBK\1\0", 6);
	m[6] = (unsigned char)type;
	m[7] = (unsigned char)flags;
	memcpy(m + 8, &len, 4);
	memset(m + 12, 0, 4);
}

/* An attach request for name (up to 35 bytes) in m (64 bytes): wait
 * timeout_ms (0xffffffff: for ever), take a payload of up to cap bytes.
 * Its length. */
static inline int raw_attach(unsigned char *m, const char *name, uint32_t timeout_ms,
			     uint32_t cap)
{
	uint16_t nl = (uint16_t)strlen(name);

	raw_header(m, RAW_ATTACH, 0, 12u + nl);
	memcpy(m + 16, &timeout_ms, 4);
	memcpy(m + 20, &cap, 4);
	memcpy(m + 24, &nl, 2);
	memset(m + 26, 0, 2);
	memcpy(m + 28, name, nl);
	return 28 + nl;
}

/* A raw publish of fd as name (up to 255 bytes) on s with the body's flags
 * (1: persistent); the reply's status. */
static inline int32_t raw_publish(int s, const char *name, int fd, uint32_t flags)
{
	unsigned char m[16 + 16 + 256];
	uint32_t len = 16 + (uint32_t)strlen(name);
	uint16_t nl = (uint16_t)strlen(name);

	raw_header(m, RAW_PUBLISH, 0, len);
	memset(m + 16, 0, 16);
	memcpy(m + 16, &flags, 4);
	memcpy(m + 20, &nl, 2);
	memcpy(m + 32, name, nl);
	if (send_fds(s, m, 16 + len, &fd, 1) != (int)(16 + len))
		return INT32_MIN;
	return raw_reply_status(s);
}

/* Receive one message on s (recvmsg flags) and close the fds it carried:
 * how many, or -1 when nothing came. */
static inline int recv_close_fds(int s, int flags)
{
	union {
		struct cmsghdr a;
		char buf[CMSG_SPACE(8 * sizeof(int))];
	} ctl;
	unsigned char buf[70000];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl) };
	ssize_t r = recvmsg(s, &m, flags | MSG_CMSG_CLOEXEC);
	int total = 0;

	if (r <= 0)
		return -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int)), fd;
		for (int i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			close(fd);
		}
		total += k;
	}
	return total;
}

/* A squatter's listener at sock, open to everyone (0666), or -1: for a
 * child as another uid, which reports failure by its exit status. */
static inline int squat_listen(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", sock);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sock, 0666) ||
	    listen(l, 8))
		return -1;
	return l;
}

/* A squatter's listener l: 1 if a client connecting within 3 s sent it a
 * message carrying fds within 1 s (a publish it must never have been
 * trusted with), 0 if not, -1 if no client came. */
static inline int handed_fds(int l)
{
	struct pollfd p = { .fd = l, .events = POLLIN };
	int s, got;

	if (poll(&p, 1, 3000) != 1 || (s = accept(l, NULL, NULL)) < 0)
		return -1;
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	got = poll(&p, 1, 1000) == 1 && recv_close_fds(s, 0) > 0;
	close(s);
	return got;
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

/* Fork a child that runs child(ready, arg), never to return (it _exits
 * when child does); the child writes one byte to ready once it is ready.
 * The parent waits for that byte (put in *said unless NULL; a child that
 * exits without it fails the test) and returns the child's pid. */
static inline pid_t fork_ready(void (*child)(int ready, void *arg), void *arg, char *said)
{
	int ready[2];
	char c;
	pid_t pid;

	REQUIRE(pipe(ready) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		child(ready[1], arg);
		_exit(0);
	}
	close(ready[1]);
	REQUIRE(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	if (said)
		*said = c;
	return pid;
}

struct broker_args {
	const char *path, *idle_ms;
};

static inline void broker_serve(int ready, void *arg)
{
	const struct broker_args *a = arg;
	rshare_broker *b;

	if (a->idle_ms)
		setenv("RSHARE_BROKER_IDLE_MS", a->idle_ms, 1);
	if (rshare_broker_start(a->path, &b) != RSHARE_OK)
		_exit(1);
	(void)!write(ready, "r", 1);
	for (;;)
		pause();
}

/* A broker at path in a child process (so that a stuck one can be
 * killed), with RSHARE_BROKER_IDLE_MS idle_ms unless NULL; serving once
 * this returns. */
static inline pid_t broker_fork(const char *path, const char *idle_ms)
{
	struct broker_args a = { path, idle_ms };

	return fork_ready(broker_serve, &a, NULL);
}

/* Kill the broker child pid and remove its socket and lock file. */
static inline void broker_kill(pid_t pid, const char *path)
{
	char lock[128];

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	unlink(lock);
}

#endif
