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
 *   fuse      the same with a file on a FUSE filesystem whose daemon does
 *             not answer FLUSH (tests/c/fuse_stall.h; root and /dev/fuse)
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
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "broker_util.h"
#include "fuse_stall.h"

static char dir[64], path[100];

/* ---- an fd whose close blocks ---- */

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
	int sent;     /* of those, how many the client took */
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
		h->sent++;
	}
	close(s);
	return NULL;
}

static int hostile_listen_at(const char *at)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	unlink(at);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at);
	REQUIRE(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 8) == 0);
	return l;
}

static int hostile_listen(void)
{
	return hostile_listen_at(path);
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

/* ---- the same with a FUSE file whose daemon does not answer FLUSH ---- */

static void give_list(int fd, void *arg)
{
	unsigned char m[16];
	int s = raw_connect(path);

	(void)arg;
	memcpy(m, "RSBK\1\0\4\0", 8);
	memset(m + 8, 0, 8);
	send_fds(s, m, 16, &fd, 1);
	(void)raw_reply_status(s); /* the broker has it now */
	close(s);
}

static void give_reply(int fd, void *arg)
{
	unsigned char req[512], m[16] = { 0 };
	int s = accept(*(int *)arg, NULL, NULL);

	if (s < 0)
		return;
	(void)!recv(s, req, sizeof(req), 0);
	memcpy(m, "RSBK\1\0", 6);
	m[6] = 2 | 0x80;
	send_fds(s, m, 16, &fd, 1);
	close(s);
}

static void give_channel(int fd, void *arg)
{
	unsigned char m[16];

	memcpy(m, "RSHC\1\0\0\0", 8);
	memset(m + 8, 0, 8);
	send_fds(*(int *)arg, m, 16, &fd, 1);
}

static void case_fuse(void)
{
	struct fuse_stall fs;
	char mnt[128], reason[128], json[4096], hpath[100];
	unsigned char got[512];
	rshare_device *d;
	rshare_share *sh;
	struct pub p;
	int l, sv[2], st;
	size_t n;
	double t0;
	pid_t broker, giver;

	snprintf(mnt, sizeof(mnt), "%s/fuse", dir);
	if (!fuse_stall_mount(&fs, mnt, reason, sizeof(reason))) {
		printf("case_fuse: %s; skipped (case linger covers the same with SO_LINGER)\n",
		       reason);
		return;
	}
	/* The broker is handed the file with a list request. */
	broker = broker_child(NULL);
	giver = fuse_stall_give(&fs, 0, give_list, NULL);
	REQUIRE(giver > 0 && waitpid(giver, &st, 0) == giver);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	t0 = now_s();
	CHECK_OK(rshare_broker_list(path, json, sizeof(json), &n));
	pub_make(&p);
	CHECK_OK(rshare_broker_publish(path, "fuse/ok", p.dev, p.payload, p.len, NULL, &sh));
	CHECK_OK(rshare_broker_attach(path, "fuse/ok", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	CHECK(now_s() - t0 < 2);

	/* A hostile broker hands it to rshare_broker_attach (beside the
	 * broker, which still runs). */
	snprintf(hpath, sizeof(hpath), "%s/h.sock", dir);
	l = hostile_listen_at(hpath);
	giver = fuse_stall_give(&fs, 1, give_reply, &l);
	t0 = now_s();
	CHECK_ST(rshare_broker_attach(hpath, "x", 0, &d, got, sizeof(got), &n), RSHARE_E_NODEV);
	CHECK(now_s() - t0 < 2);
	REQUIRE(waitpid(giver, NULL, 0) == giver);
	close(l);
	unlink(hpath);

	/* A channel peer does. */
	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	giver = fuse_stall_give(&fs, 2, give_channel, &sv[0]);
	REQUIRE(waitpid(giver, NULL, 0) == giver);
	t0 = now_s();
	CHECK_ST(rshare_channel_recv(sv[1], &d, got, sizeof(got), &n), RSHARE_E_NODEV);
	CHECK(now_s() - t0 < 2);
	close(sv[0]);
	close(sv[1]);
	/* Only now can it go: its closer waits for the daemon, and a process
	 * is reaped only once all its threads are gone. */
	fuse_stall_unmount(&fs);
	stop_child(broker);
}

/* ---- a hostile broker's replies ---- */

static int hostile_attach(uint8_t type, int32_t status, uint32_t len, size_t *n)
{
	struct hostile h = { .type = type, .status = status, .len = len, .fd = -1 };
	unsigned char got[64];
	rshare_device *d = NULL;
	pthread_t t;
	int st;

	h.lfd = hostile_listen();
	REQUIRE(pthread_create(&t, NULL, hostile_broker, &h) == 0);
	*n = 12345;
	st = rshare_broker_attach(path, "x", 0, &d, got, sizeof(got), n);
	pthread_join(t, NULL);
	close(h.lfd);
	CHECK(d == NULL);
	return st;
}

static void case_hostile(void)
{
	struct hostile h = { .type = 4, .flags = 1, .fd = -1, .chunks = 100000 };
	char json[4096];
	pthread_t t;
	size_t n;
	double t0;

	/* Statuses the broker never sends reach nobody. */
	CHECK_ST(hostile_attach(2, -200, 0, &n), RSHARE_E_PROTOCOL);
	CHECK_MSG("status -200");
	CHECK_ST(hostile_attach(2, RSHARE_E_STALE, 0, &n), RSHARE_E_PROTOCOL);
	CHECK_ST(hostile_attach(0, -255, 0, &n), RSHARE_E_PROTOCOL); /* a refusal */
	/* NOSPACE without its length: not NOSPACE with *len unset. */
	CHECK_ST(hostile_attach(2, RSHARE_E_NOSPACE, 0, &n), RSHARE_E_PROTOCOL);
	CHECK(n == 12345);
	/* Documented ones do, with the broker's text. */
	CHECK_ST(hostile_attach(2, RSHARE_E_PERM, 0, &n), RSHARE_E_PERM);
	/* Endless empty chunks flagged "more": cut short. */
	h.lfd = hostile_listen();
	REQUIRE(pthread_create(&t, NULL, hostile_broker, &h) == 0);
	t0 = now_s();
	CHECK_ST(rshare_broker_list(path, json, sizeof(json), &n), RSHARE_E_PROTOCOL);
	CHECK(now_s() - t0 < 2);
	pthread_join(t, NULL);
	if (h.sent >= 5000)
		fprintf(stderr, "hostile: the client took %d empty chunks\n", h.sent);
	CHECK(h.sent < 5000); /* what the socket queued before the client left */
	close(h.lfd);
	unlink(path);
}

/* ---- unread lists ---- */

static long rss_kb(pid_t pid)
{
	char name[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%d/status", (int)pid);
	f = fopen(name, "r");
	REQUIRE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* 2,000 shares with long names; 200 connections ask for the list and read
 * none of it: the broker's memory barely moves (it held each whole list,
 * about 1 MB, until read or dropped). */
static void case_listamp(void)
{
	enum { SHARES = 2000, LISTERS = 200 };
	static int conns[LISTERS];
	unsigned char m[16];
	rshare_device *dev;
	long before, after;
	int pubs, fd;
	pid_t broker = broker_child("60000");

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	pubs = raw_connect(path);
	for (int i = 0; i < SHARES; i++) {
		unsigned char pm[16 + 16 + 256];
		char name[256];
		uint32_t len, flags = 0;
		uint16_t nl;

		snprintf(name, sizeof(name), "amp/%0200d", i);
		nl = (uint16_t)strlen(name);
		len = 16 + nl;
		memcpy(pm, "RSBK\1\0\1\0", 8);
		memcpy(pm + 8, &len, 4);
		memset(pm + 12, 0, 4 + 16);
		memcpy(pm + 16, &flags, 4);
		memcpy(pm + 20, &nl, 2);
		memcpy(pm + 32, name, nl);
		REQUIRE(send_fds(pubs, pm, 16 + len, &fd, 1) == (int)(16 + len));
		REQUIRE(raw_reply_status(pubs) == RSHARE_OK);
	}
	usleep(200000);
	before = rss_kb(broker);
	memcpy(m, "RSBK\1\0\4\0", 8);
	memset(m + 8, 0, 8);
	for (int i = 0; i < LISTERS; i++) {
		conns[i] = raw_connect(path);
		REQUIRE(send(conns[i], m, 16, MSG_NOSIGNAL) == 16);
	}
	usleep(500000);
	after = rss_kb(broker);
	printf("listamp: broker RSS %ld kB before, %ld kB with %d unread lists\n", before, after,
	       LISTERS);
	CHECK(after - before < 16 * 1024);
	for (int i = 0; i < LISTERS; i++)
		close(conns[i]);
	close(pubs);
	stop_child(broker);
	CHECK_OK(rshare_device_close(dev));
}

/* ---- the fd limit ---- */

/* A broker started with a soft fd limit of 1024 (hard 8192), 1,100 of its
 * own user's attachers waiting: its publisher still gets in. */
static void case_nofile(void)
{
	enum { WAITERS = 1100 };
	static int conns[WAITERS];
	struct rlimit rl, want = { 1024, 8192 };
	unsigned char m[64];
	uint32_t forever = 0xffffffffu;
	rshare_share *sh;
	struct pub p;
	int ready[2];
	pid_t broker;
	char c;

	REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	rl.rlim_cur = rl.rlim_max;
	if (rl.rlim_max < WAITERS + 200 || setrlimit(RLIMIT_NOFILE, &rl) != 0 ||
	    (rl.rlim_max < want.rlim_max && geteuid() != 0)) {
		printf("case_nofile: needs %d fds here and a hard limit of 8192 for the broker; "
		       "skipped\n", WAITERS + 200);
		return;
	}
	REQUIRE(pipe(ready) == 0);
	fflush(NULL);
	broker = fork();
	REQUIRE(broker >= 0);
	if (broker == 0) {
		rshare_broker *b;
		struct rlimit now;
		if (setrlimit(RLIMIT_NOFILE, &want) != 0 ||
		    rshare_broker_start(path, &b) != RSHARE_OK)
			_exit(1);
		getrlimit(RLIMIT_NOFILE, &now);
		c = now.rlim_cur == want.rlim_max ? 'r' : 'l'; /* raised to the hard limit */
		(void)!write(ready[1], &c, 1);
		for (;;)
			pause();
	}
	REQUIRE(read(ready[0], &c, 1) == 1);
	CHECK(c == 'r');
	memcpy(m, "RSBK\1\0\2\0", 8);
	m[8] = 12 + 6;
	memset(m + 9, 0, 7 + 12);
	memcpy(m + 16, &forever, 4);
	m[24] = 6;
	memcpy(m + 28, "n/none", 6);
	for (int i = 0; i < WAITERS; i++) {
		conns[i] = raw_connect(path);
		REQUIRE(send(conns[i], m, 34, MSG_NOSIGNAL) == 34);
	}
	pub_make(&p);
	CHECK_OK(rshare_broker_publish(path, "n/pub", p.dev, p.payload, p.len, NULL, &sh));
	if (sh)
		CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	for (int i = 0; i < WAITERS; i++)
		close(conns[i]);
	stop_child(broker);
	close(ready[0]);
	close(ready[1]);
}

/* ---- replies pipelined and never read ---- */

/* The fds a socket's queued replies carry, all read now. */
static int queued_fds(int s)
{
	int total = 0;

	for (;;) {
		union {
			struct cmsghdr a;
			char buf[CMSG_SPACE(8 * sizeof(int))];
		} ctl;
		unsigned char buf[1024];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl) };
		ssize_t r = recvmsg(s, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (r <= 0)
			return total;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int)), fd;
			for (int i = 0; i < k; i++) {
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				close(fd);
			}
			total += k;
		}
	}
}

/* Its own share, 40 attaches pipelined on each of 20 connections, nothing
 * read: at most one fd each in flight (there were 40 per connection,
 * charged by the kernel to the broker's user). */
static void case_inflight(void)
{
	enum { CONNS = 20, PIPELINED = 40 };
	unsigned char m[64];
	rshare_share *sh;
	struct pub p;
	int conns[CONNS], fds = 0;
	pid_t broker = broker_child("60000");

	pub_make(&p);
	REQUIRE_OK(rshare_broker_publish(path, "fl/mine", p.dev, p.payload, p.len, NULL, &sh));
	memcpy(m, "RSBK\1\0\2\0", 8);
	m[8] = 12 + 7;
	memset(m + 9, 0, 7 + 12);
	m[20] = 0xff, m[21] = 0xff; /* a payload of up to 65535 bytes */
	m[24] = 7;
	memcpy(m + 28, "fl/mine", 7);
	for (int i = 0; i < CONNS; i++) {
		conns[i] = raw_connect(path);
		for (int k = 0; k < PIPELINED; k++)
			if (send(conns[i], m, 35, MSG_NOSIGNAL | MSG_DONTWAIT) != 35)
				break;
	}
	usleep(500000);
	for (int i = 0; i < CONNS; i++) {
		fds += queued_fds(conns[i]);
		close(conns[i]);
	}
	printf("inflight: %d fds queued for %d connections\n", fds, CONNS);
	CHECK(fds <= CONNS);
	CHECK(fds >= 1); /* the first attach of each was served */
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	stop_child(broker);
}

/* ---- the kept connection and setuid ---- */

#define WORKER_UID 65534

/* In a worker that dropped root without exec: exit 1 if some fd is a
 * connection to the broker that attaches the root-only share for it. */
static int worker_after_setuid(void)
{
	unsigned char m[64];
	rshare_device *d;
	unsigned char got[512];
	size_t n;

	if (setgid(WORKER_UID) || setuid(WORKER_UID))
		return 100;
	memcpy(m, "RSBK\1\0\2\0", 8);
	m[8] = 12 + 9;
	memset(m + 9, 0, 7 + 12);
	m[20] = 0xff, m[21] = 0xff;
	m[24] = 9;
	memcpy(m + 28, "kp/secret", 9);
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_un sa;
		socklen_t len = sizeof(sa);
		if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sun_family != AF_UNIX ||
		    strcmp(sa.sun_path, path) != 0)
			continue;
		if (send(fd, m, 37, MSG_NOSIGNAL) == 37 && raw_reply_status(fd) == RSHARE_OK) {
			fprintf(stderr, "kept: fd %d attached root's share for uid %d\n", fd,
				(int)getuid());
			return 1;
		}
	}
	/* Through the library: its own connection, judged as this uid. */
	return rshare_broker_attach(path, "kp/secret", 0, &d, got, sizeof(got), &n) ==
			       RSHARE_E_PERM
		       ? 0
		       : 2;
}

/* Root's private share, published by another process (so that the only
 * broker connection this one holds is the kept one). */
static pid_t publisher(const char *name)
{
	int ready[2];
	char c;
	pid_t pid;

	REQUIRE(pipe(ready) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_share *sh;
		struct pub p;
		pub_make(&p);
		if (rshare_broker_publish(path, name, p.dev, p.payload, p.len, NULL, &sh))
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

static void case_kept(void)
{
	unsigned char got[512];
	rshare_device *d;
	size_t n;
	pid_t broker, worker, pub;
	int st;

	if (geteuid() != 0) {
		printf("case_kept: needs root to drop to another uid; skipped\n");
		return;
	}
	broker = broker_child(NULL);
	pub = publisher("kp/secret");
	REQUIRE_OK(rshare_broker_attach(path, "kp/secret", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d)); /* the connection is kept */
	fflush(NULL);
	worker = fork();
	REQUIRE(worker >= 0);
	if (worker == 0)
		_exit(worker_after_setuid());
	REQUIRE(waitpid(worker, &st, 0) == worker);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The parent's kept connection still serves the parent. */
	CHECK_OK(rshare_broker_attach(path, "kp/secret", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	kill(pub, SIGKILL);
	waitpid(pub, NULL, 0);
	stop_child(broker);
}

/* ---- endpoints in a world-writable directory ---- */

#define OWNER 4246
#define SQUAT 4247

/* The squatter binds name in the open directory and reports (exit 1) if a
 * publisher handed it an fd; or makes and locks name.lock and holds it. */
static void squat_socket(const char *sock, int ready)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd pf;
	int l, s, got = 0;

	if (setgid(SQUAT) || setuid(SQUAT))
		_exit(2);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sock, 0666) ||
	    listen(l, 8))
		_exit(3);
	(void)!write(ready, "r", 1);
	pf = (struct pollfd){ .fd = l, .events = POLLIN };
	if (poll(&pf, 1, 3000) == 1 && (s = accept(l, NULL, NULL)) >= 0) {
		union {
			struct cmsghdr a;
			char buf[CMSG_SPACE(8 * sizeof(int))];
		} ctl;
		unsigned char buf[70000];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl) };
		pf = (struct pollfd){ .fd = s, .events = POLLIN };
		if (poll(&pf, 1, 1000) == 1 && recvmsg(s, &m, 0) > 0 && CMSG_FIRSTHDR(&m))
			got = 1;
	}
	_exit(got);
}

static void squat_lock(const char *sock, int ready)
{
	char lock[160];
	int fd;

	if (setgid(SQUAT) || setuid(SQUAT))
		_exit(2);
	snprintf(lock, sizeof(lock), "%s.lock", sock);
	fd = open(lock, O_RDWR | O_CREAT, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) != 0)
		_exit(3);
	(void)!write(ready, "r", 1);
	for (;;)
		pause();
}

static pid_t squatter_for(void (*squat)(const char *, int), const char *sock)
{
	int ready[2];
	char c;
	pid_t pid;

	REQUIRE(pipe(ready) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		squat(sock, ready[1]);
	REQUIRE(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	close(ready[1]);
	return pid;
}

/* As OWNER: exit 0 if the publish to the squatted socket was refused
 * (PERM) and the broker starts despite the squatted lock file. */
static int owner_side(const char *sock, int which)
{
	rshare_device *dev;
	rshare_broker *b;
	rshare_share *sh;
	int st;

	if (setgid(OWNER) || setuid(OWNER))
		return 100;
	if (which == 0) {
		if (rshare_device_open("sim0", &dev))
			return 101;
		st = rshare_broker_publish(sock, "secret", dev, "pay", 3, NULL, &sh);
		if (st != RSHARE_E_PERM) {
			fprintf(stderr, "endpoint: publish to a squatter: %s: %s\n",
				rshare_status_name(st), rshare_last_error());
			return 1;
		}
		rshare_device_close(dev);
		return 0;
	}
	st = rshare_broker_start(sock, &b);
	if (st != RSHARE_OK) {
		fprintf(stderr, "endpoint: start beside a squatted lock: %s: %s\n",
			rshare_status_name(st), rshare_last_error());
		return 2;
	}
	rshare_broker_stop(b);
	return 0;
}

static void case_endpoint(void)
{
	char open_dir[128], sock[160];
	pid_t sq, ow;
	int st;

	if (geteuid() != 0) {
		printf("case_endpoint: needs root to be two other uids; skipped\n");
		return;
	}
	snprintf(open_dir, sizeof(open_dir), "%s/open", dir);
	snprintf(sock, sizeof(sock), "%s/NAME.sock", open_dir);
	REQUIRE(mkdir(open_dir, 0777) == 0 && chmod(open_dir, 01777) == 0);
	for (int which = 0; which < 2; which++) {
		sq = squatter_for(which == 0 ? squat_socket : squat_lock, sock);
		ow = fork();
		REQUIRE(ow >= 0);
		if (ow == 0)
			_exit(owner_side(sock, which));
		REQUIRE(waitpid(ow, &st, 0) == ow);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		kill(sq, SIGTERM);
		REQUIRE(waitpid(sq, &st, 0) == sq);
		/* Killed while waiting (no fd received) or exited 0. */
		CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
		unlink(sock);
	}
	snprintf(sock, sizeof(sock), "%s/NAME.sock.lock", open_dir);
	unlink(sock);
	(void)!system("rm -rf /tmp/rshare-4246");
	rmdir(open_dir);
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	make_endpoint(dir, sizeof(dir), path, sizeof(path));
}

static void teardown(void)
{
	rmdir(dir);
}

/* c_cases.def runs linger and fuse last: they leave closer threads in this
 * process (stuck until their fds' other sides let go), and ThreadSanitizer
 * does not allow a forked child of a multithreaded process to start
 * threads. */
#define T_PROGRAM_test_broker_trust ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
