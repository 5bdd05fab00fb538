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
	raw_header(m, h->type | RAW_REPLY, h->flags, h->len);
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


static void case_linger(void)
{
	enum { LINGER_S = 20 };
	unsigned char m[16], got[512];
	int lst[3], sfd, s, sv[2];
	rshare_device *d;
	struct hostile h = { .type = 2, .status = 0, .len = 0 };
	pthread_t t;
	double t0;
	size_t n;
	pid_t broker;
	char json[4096];

	/* The broker: a list request carrying the fd, then honest work. */
	broker = broker_fork(path, NULL);
	sfd = linger_fd(&lst[0], LINGER_S);
	s = raw_connect(path);
	raw_header(m, RAW_LIST, 0, 0);
	CHECK(send_fds(s, m, 16, &sfd, 1) == 16);
	close(sfd); /* the broker's is the last reference now */
	CHECK(raw_reply_status(s) == RSHARE_E_PROTOCOL); /* an unexpected fd */
	close(s);
	t0 = now_s();
	CHECK_OK(rshare_broker_list(path, json, sizeof(json), &n));
	honest_share(path, "linger/ok");
	if (now_s() - t0 >= 2)
		fprintf(stderr, "linger: honest calls took %.1f s after the fd\n", now_s() - t0);
	CHECK(now_s() - t0 < 2);
	broker_kill(broker, path);

	/* A hostile broker hands rshare_broker_attach such an fd. */
	h.lfd = raw_listen(path);
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
	for (int i = 0; i < 3; i++)
		close(lst[i]);
}

/* ---- the same with a FUSE file whose daemon does not answer FLUSH ---- */

static void give_list(int fd, void *arg)
{
	unsigned char m[16];
	int s = raw_connect(path);

	(void)arg;
	raw_header(m, RAW_LIST, 0, 0);
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
	raw_header(m, RAW_ATTACH | RAW_REPLY, 0, 0);
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
	broker = broker_fork(path, NULL);
	giver = fuse_stall_give(&fs, 0, give_list, NULL);
	REQUIRE(giver > 0 && waitpid(giver, &st, 0) == giver);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	t0 = now_s();
	CHECK_OK(rshare_broker_list(path, json, sizeof(json), &n));
	honest_share(path, "fuse/ok");
	CHECK(now_s() - t0 < 2);

	/* A hostile broker hands it to rshare_broker_attach (beside the
	 * broker, which still runs). */
	snprintf(hpath, sizeof(hpath), "%s/h.sock", dir);
	l = raw_listen(hpath);
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
	broker_kill(broker, path);
}

/* ---- a hostile broker's replies ---- */

static int hostile_attach(uint8_t type, int32_t status, uint32_t len, size_t *n)
{
	struct hostile h = { .type = type, .status = status, .len = len, .fd = -1 };
	unsigned char got[64];
	rshare_device *d = NULL;
	pthread_t t;
	int st;

	h.lfd = raw_listen(path);
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
	h.lfd = raw_listen(path);
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
	pid_t broker = broker_fork(path, "60000");

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	pubs = raw_connect(path);
	for (int i = 0; i < SHARES; i++) {
		char name[256];

		snprintf(name, sizeof(name), "amp/%0200d", i);
		REQUIRE(raw_publish(pubs, name, fd, 0) == RSHARE_OK);
	}
	usleep(200000);
	before = rss_kb(broker);
	raw_header(m, RAW_LIST, 0, 0);
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
	broker_kill(broker, path);
	CHECK_OK(rshare_device_close(dev));
}

/* ---- the fd limit ---- */

/* A broker started with a soft fd limit of 1024 (hard 8192): it says 'r'
 * when it raised the soft limit to the hard one. */
static void broker_low_nofile(int ready, void *arg)
{
	const struct rlimit want = { 1024, 8192 };
	struct rlimit now;
	rshare_broker *b;
	char c;

	(void)arg;
	if (setrlimit(RLIMIT_NOFILE, &want) != 0 || rshare_broker_start(path, &b) != RSHARE_OK)
		_exit(1);
	getrlimit(RLIMIT_NOFILE, &now);
	c = now.rlim_cur == want.rlim_max ? 'r' : 'l';
	(void)!write(ready, &c, 1);
	for (;;)
		pause();
}

/* Such a broker with 1,100 of its own user's attachers waiting: its
 * publisher still gets in. */
static void case_nofile(void)
{
	enum { WAITERS = 1100 };
	static int conns[WAITERS];
	struct rlimit rl;
	unsigned char m[64];
	rshare_share *sh;
	struct pub p;
	pid_t broker;
	char c;
	int n;

	REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	rl.rlim_cur = rl.rlim_max;
	if (rl.rlim_max < WAITERS + 200 || setrlimit(RLIMIT_NOFILE, &rl) != 0 ||
	    (rl.rlim_max < 8192 && geteuid() != 0)) {
		printf("case_nofile: needs %d fds here and a hard limit of 8192 for the broker; "
		       "skipped\n", WAITERS + 200);
		return;
	}
	broker = fork_ready(broker_low_nofile, NULL, &c);
	CHECK(c == 'r');
	n = raw_attach(m, "n/none", 0xffffffffu, 0);
	for (int i = 0; i < WAITERS; i++) {
		conns[i] = raw_connect(path);
		REQUIRE(send(conns[i], m, n, MSG_NOSIGNAL) == n);
	}
	pub_make(&p);
	CHECK_OK(rshare_broker_publish(path, "n/pub", p.dev, p.payload, p.len, NULL, &sh));
	if (sh)
		CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	for (int i = 0; i < WAITERS; i++)
		close(conns[i]);
	broker_kill(broker, path);
}

/* ---- replies pipelined and never read ---- */

/* The fds a socket's queued replies carry, all read now. */
static int queued_fds(int s)
{
	int total = 0, k;

	while ((k = recv_close_fds(s, MSG_DONTWAIT)) >= 0)
		total += k;
	return total;
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
	int conns[CONNS], fds = 0, n;
	pid_t broker = broker_fork(path, "60000");

	pub_make(&p);
	REQUIRE_OK(rshare_broker_publish(path, "fl/mine", p.dev, p.payload, p.len, NULL, &sh));
	n = raw_attach(m, "fl/mine", 0, 0xffff); /* a payload of up to 65535 bytes */
	for (int i = 0; i < CONNS; i++) {
		conns[i] = raw_connect(path);
		for (int k = 0; k < PIPELINED; k++)
			if (send(conns[i], m, n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
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
	broker_kill(broker, path);
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
	int mlen;

	if (setgid(WORKER_UID) || setuid(WORKER_UID))
		return 100;
	mlen = raw_attach(m, "kp/secret", 0, 0xffff);
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_un sa;
		socklen_t len = sizeof(sa);
		if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sun_family != AF_UNIX ||
		    strcmp(sa.sun_path, path) != 0)
			continue;
		if (send(fd, m, mlen, MSG_NOSIGNAL) == mlen && raw_reply_status(fd) == RSHARE_OK) {
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
static void publish_serve(int ready, void *name)
{
	rshare_share *sh;
	struct pub p;

	pub_make(&p);
	if (rshare_broker_publish(path, name, p.dev, p.payload, p.len, NULL, &sh))
		_exit(1);
	(void)!write(ready, "r", 1);
	for (;;)
		pause();
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
	broker = broker_fork(path, NULL);
	pub = fork_ready(publish_serve, "kp/secret", NULL);
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
	broker_kill(broker, path);
}

/* ---- endpoints in a world-writable directory ---- */

#define OWNER 4246
#define SQUAT 4247

/* The squatter binds name in the open directory and reports (exit 1) if a
 * publisher handed it an fd; or makes and locks name.lock and holds it. */
static void squat_socket(int ready, void *arg)
{
	int l;

	if (setgid(SQUAT) || setuid(SQUAT))
		_exit(2);
	l = squat_listen(arg);
	if (l < 0)
		_exit(3);
	(void)!write(ready, "r", 1);
	_exit(handed_fds(l) == 1);
}

static void squat_lock(int ready, void *arg)
{
	const char *sock = arg;
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
		sq = fork_ready(which == 0 ? squat_socket : squat_lock, sock, NULL);
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
