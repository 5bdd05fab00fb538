/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker and its clients against each other's hostility, one finding
 * of an adversarial review per case (regression tests):
 *   empty     an empty record carrying fds: the broker closes them
 *   fake      a fake broker's replies (empty with an fd, wrong magic, huge
 *             length, no fd, a non-device fd, extra fds): clear status, no fd
 *             kept by the client
 *   emfile    a broker out of fds does not spin on its listener, and
 *             serves again once connections close
 *   squat     another user's broker at the /tmp default path is not trusted
 *             with a publish or an attach
 *   quota     another user holds at most 256 connections (waiting attaches
 *             never time out): beyond, BUSY; the broker's user still served
 *   shares    and at most 256 shares, persistent ones (which outlive their
 *             connection) included
 *   list      a client that reads none of a long list reply is dropped after
 *             the idle time, even a publisher
 *   symlink   the socket's directory a symlink of another user: refused
 * Run with no argument for all, or one case name.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "broker_util.h"

static char dir[64], path[100];

/* Empty seqpacket records with fds: recvmsg() returns 0, as at the end of
 * the stream, but the fds arrived; the broker leaked them. */
static void case_empty(void)
{
	rshare_broker *b;
	int before, p[2], fds[3];
	char json[4096];
	size_t n;

	REQUIRE_OK(rshare_broker_start(path, &b));
	REQUIRE(pipe(p) == 0);
	fds[0] = p[0];
	fds[1] = p[1];
	fds[2] = p[0];
	before = settled_fds();
	for (int i = 0; i < 50; i++) {
		int s = raw_connect(path);
		CHECK(send_fds(s, "", 0, fds, 3) == 0);
		close(s);
	}
	/* Still serving, and nothing kept. */
	CHECK_OK(rshare_broker_list(path, json, sizeof(json), &n));
	CHECK(settled_fds() == before);
	close(p[0]);
	close(p[1]);
	CHECK_OK(rshare_broker_stop(b));
}

/* ---- a fake broker ---- */

enum trick {
	EMPTY_FD, BAD_MAGIC, HUGE_LEN, OK_NO_FD, OK_PIPE, OK_TWO_FDS, OK_EXTRA_UNASKED, OK_LONG,
	NTRICKS
};

struct fake {
	int lfd;
	int tricks; /* served one per connection, in order */
	int p[2];   /* the fds it hands out: a pipe */
};

static void *fake_broker(void *arg)
{
	struct fake *f = arg;
	unsigned char req[512], m[64];
	int *p = f->p;

	for (int t = 0; t < f->tricks; t++) {
		int s = accept(f->lfd, NULL, NULL), fds[2] = { p[0], p[1] };
		uint32_t len = 0;
		int32_t st = 0;

		REQUIRE(s >= 0);
		(void)!recv(s, req, sizeof(req), 0);
		if (t == HUGE_LEN)
			len = 0xfffffff0u;
		if (t == OK_LONG)
			len = 48; /* more than the 4-byte buffer asked for */
		/* An attach reply; LEDGER: the second fd is the device's. */
		raw_header(m, RAW_ATTACH | RAW_REPLY, t == OK_TWO_FDS ? 4 : 0, len);
		memcpy(m + 12, &st, 4);
		memset(m + 16, 0, 48);
		if (t == BAD_MAGIC)
			m[0] = 'X';
		switch (t) {
		case EMPTY_FD:
			send_fds(s, "", 0, fds, 1);
			break;
		case OK_NO_FD:
			send_fds(s, m, 16, NULL, 0);
			break;
		case OK_TWO_FDS:
		case OK_EXTRA_UNASKED:
			send_fds(s, m, 16, fds, 2);
			break;
		case OK_LONG:
			send_fds(s, m, 64, fds, 1);
			break;
		default:
			send_fds(s, m, 16, fds, 1);
		}
		close(s);
	}
	return NULL;
}

/* How many fds of this process are the pipe fd p is an end of. */
static int pipe_fds(int p)
{
	char want[64], link[64], name[64];
	int n = 0;
	ssize_t k;

	snprintf(name, sizeof(name), "/proc/self/fd/%d", p);
	k = readlink(name, want, sizeof(want) - 1);
	REQUIRE(k > 0);
	want[k] = '\0';
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
		k = readlink(name, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			n += strcmp(link, want) == 0;
		}
	}
	return n;
}

static void case_fake(void)
{
	static const int want[NTRICKS] = {
		[EMPTY_FD] = RSHARE_E_IO,          [BAD_MAGIC] = RSHARE_E_PROTOCOL,
		[HUGE_LEN] = RSHARE_E_PROTOCOL,    [OK_NO_FD] = RSHARE_E_PROTOCOL,
		/* Two fds flagged LEDGER are a device and its ledger since
		 * 1.2: these pipe ends are no device, so both are closed and
		 * NODEV answered. Unflagged, the second is an extra fds the
		 * attach did not ask for: both closed, PROTOCOL. */
		[OK_PIPE] = RSHARE_E_NODEV,        [OK_TWO_FDS] = RSHARE_E_NODEV,
		[OK_EXTRA_UNASKED] = RSHARE_E_PROTOCOL,
		[OK_LONG] = RSHARE_E_PROTOCOL,
	};
	struct fake f = { .tricks = NTRICKS };
	unsigned char got[4];
	rshare_device *d;
	pthread_t t;
	size_t n;
	int before;

	f.lfd = raw_listen(path);
	REQUIRE(pipe(f.p) == 0);
	/* First use: the device scan loads rdma-core, which keeps an fd. */
	REQUIRE_OK(rshare_device_open("sim0", &d));
	CHECK_OK(rshare_device_close(d));
	before = count_fds();
	REQUIRE(pthread_create(&t, NULL, fake_broker, &f) == 0);
	for (int i = 0; i < NTRICKS; i++) {
		d = NULL;
		CHECK_ST(rshare_broker_attach(path, "x", 0, &d, got, sizeof(got), &n), want[i]);
		CHECK(d == NULL);
		/* None of the fds it sent kept; at most the connection, which
		 * attach keeps when the reply itself parsed (closed at the next
		 * attach, which finds it hung up). Untrusted fds are closed
		 * off the caller's thread (util/closer.c): wait until they are
		 * (up to 5 s) before counting. */
		for (int w = 0; w < 500 && (pipe_fds(f.p[0]) != 2 || count_fds() > before + 1); w++)
			usleep(10000);
		if (pipe_fds(f.p[0]) != 2 || count_fds() > before + 1)
			fprintf(stderr, "trick %d: %d fds, %d before\n", i, count_fds(), before);
		CHECK(pipe_fds(f.p[0]) == 2);
		CHECK(count_fds() <= before + 1);
	}
	pthread_join(t, NULL);
	close(f.p[0]);
	close(f.p[1]);
	close(f.lfd);
	unlink(path);
}

/* ---- out of fds ---- */

static double cpu_s(pid_t pid)
{
	char name[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%d/stat", (int)pid);
	f = fopen(name, "r");
	REQUIRE(f != NULL);
	REQUIRE(fgets(buf, sizeof(buf), f) != NULL);
	fclose(f);
	p = strrchr(buf, ')');
	REQUIRE(p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			    &ut, &st) == 2);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* A broker left with 48 fds once started. */
static void broker_48_fds(int ready, void *arg)
{
	struct rlimit rl = { 48, 48 };
	rshare_broker *b;

	(void)arg;
	setenv("RSHARE_BROKER_IDLE_MS", "60000", 1);
	if (rshare_broker_start(path, &b) != RSHARE_OK || setrlimit(RLIMIT_NOFILE, &rl) != 0)
		_exit(1);
	(void)!write(ready, "r", 1);
	for (;;)
		pause();
}

static void case_emfile(void)
{
	enum { CONNS = 80 };
	int conns[CONNS];
	char json[4096];
	size_t n;
	double cpu;
	pid_t pid = fork_ready(broker_48_fds, NULL, NULL);

	/* More silent connections than the broker has fds. */
	for (int i = 0; i < CONNS; i++)
		conns[i] = raw_connect(path);
	usleep(200000);
	cpu = cpu_s(pid);
	usleep(1000000);
	cpu = cpu_s(pid) - cpu;
	if (cpu > 0.05)
		fprintf(stderr, "broker out of fds used %.2f s of CPU in 1 s\n", cpu);
	CHECK(cpu <= 0.05);
	for (int i = 0; i < CONNS; i++)
		close(conns[i]);
	/* Serving again. */
	CHECK_OK(rshare_broker_list(path, json, sizeof(json), &n));
	broker_kill(pid, path);
}

/* ---- /tmp squatting ---- */

#define VICTIM 4244
#define SQUATTER 4245

/* The squatter's fake broker: exit 1 if the victim handed it an fd (on
 * its publish or its attach). */
static void squatter(int ready, void *arg)
{
	char tdir[64], sock[100];
	int l, got = 0;

	(void)arg;
	if (setgid(SQUATTER) || setuid(SQUATTER))
		_exit(2);
	snprintf(tdir, sizeof(tdir), "/tmp/rshare-%d", VICTIM);
	snprintf(sock, sizeof(sock), "%s/broker.sock", tdir);
	if (mkdir(tdir, 0755) || (l = squat_listen(sock)) < 0)
		_exit(3);
	(void)!write(ready, "r", 1);
	for (int i = 0, r = 0; i < 2 && r >= 0; i++) {
		r = handed_fds(l);
		got |= r == 1;
	}
	_exit(got);
}

static int victim(void)
{
	rshare_device *dev, *d;
	rshare_share *sh;
	unsigned char got[64];
	size_t n;
	int bad = 0;

	if (setgid(VICTIM) || setuid(VICTIM))
		return 100;
	unsetenv("RSHARE_BROKER");
	unsetenv("XDG_RUNTIME_DIR");
	if (rshare_device_open("sim0", &dev))
		return 101;
	if (rshare_broker_publish(NULL, "secret", dev, "pay", 3, NULL, &sh) != RSHARE_E_PERM)
		bad |= 1;
	if (rshare_broker_attach(NULL, "secret", 0, &d, got, sizeof(got), &n) != RSHARE_E_PERM)
		bad |= 2;
	if (!strstr(rshare_last_error(), "uid 4245"))
		bad |= 4;
	rshare_device_close(dev);
	return bad;
}

static void case_squat(void)
{
	pid_t sq, vi;
	int st;

	if (geteuid() != 0) {
		printf("case_squat: needs root to become two other uids; skipped\n");
		return;
	}
	(void)!system("rm -rf /tmp/rshare-4244");
	sq = fork_ready(squatter, NULL, NULL);
	vi = fork();
	if (vi == 0)
		_exit(victim());
	REQUIRE(vi > 0 && waitpid(vi, &st, 0) == vi);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "victim: status 0x%x\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kill(sq, SIGTERM);
	REQUIRE(waitpid(sq, &st, 0) == sq);
	/* Killed while waiting (no fd received) or exited 0. */
	CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
	(void)!system("rm -rf /tmp/rshare-4244");
}

/* ---- one user's connections ---- */

#define QUOTA 256
#define TRIES 300

/* As nobody: TRIES connections each waiting for a name that never comes.
 * Exit 0 when exactly those beyond the quota were refused with BUSY and a
 * further attach says BUSY too. */
static int hog(int ready, int done)
{
	static int s[TRIES];
	unsigned char m[64], got[8];
	rshare_device *d;
	int busy = 0, other = 0, st, len;
	size_t n;
	char c;

	if (setgid(65534) || setuid(65534))
		return 100;
	len = raw_attach(m, "q/none", 0xffffffffu, 0);
	for (int i = 0; i < TRIES; i++) {
		s[i] = raw_connect(path);
		if (send(s[i], m, len, MSG_NOSIGNAL) != len)
			return 101;
	}
	usleep(300000);
	for (int i = 0; i < TRIES; i++) {
		unsigned char r[1024];
		if (recv(s[i], r, sizeof(r), MSG_DONTWAIT) >= 16) {
			memcpy(&st, r + 12, 4);
			busy += st == RSHARE_E_BUSY && r[6] == 0x80;
			other += st != RSHARE_E_BUSY;
		}
	}
	st = rshare_broker_attach(path, "q/none", 0, &d, got, sizeof(got), &n);
	if (busy != TRIES - QUOTA || other || st != RSHARE_E_BUSY) {
		fprintf(stderr, "hog: %d busy, %d other, attach %d: %s\n", busy, other, st,
			rshare_last_error());
		return 1;
	}
	(void)!write(ready, "r", 1);
	(void)!read(done, &c, 1);
	return 0;
}

static void case_quota(void)
{
	int ready[2], done[2], st;
	rshare_broker *b;
	pid_t pid;
	char c;

	if (geteuid() != 0) {
		printf("case_quota: needs root to become another uid; skipped\n");
		return;
	}
	REQUIRE_OK(rshare_broker_start(path, &b));
	REQUIRE(pipe(ready) == 0 && pipe(done) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(hog(ready[1], done[0]));
	REQUIRE(pid > 0);
	close(ready[1]);
	CHECK(read(ready[0], &c, 1) == 1);
	/* The broker's own user is served while nobody holds its quota. */
	honest_share(path, "q/mine");
	(void)!write(done[1], "d", 1);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(ready[0]);
	close(done[0]);
	close(done[1]);
	CHECK_OK(rshare_broker_stop(b));
}

/* ---- persistent shares of another user ---- */

/* As nobody: persistent shares (which outlive their connection) beyond
 * the quota are refused; exit 0 when exactly 256 were taken. */
static int hoarder(void)
{
	rshare_device *dev;
	int ok = 0, busy = 0, fd;

	if (setgid(65534) || setuid(65534))
		return 100;
	if (rshare_device_open("sim0", &dev) || rshare_device_fd(dev, &fd))
		return 101;
	for (int i = 0; i < 260; i++) {
		char name[32];
		int s = raw_connect(path);
		int32_t st;
		snprintf(name, sizeof(name), "hoard/%d", i);
		st = raw_publish(s, name, fd, 1); /* persistent */
		ok += st == RSHARE_OK;
		busy += st == RSHARE_E_BUSY;
		close(s); /* the share stays: persistent */
	}
	if (ok != 256 || busy != 4) {
		fprintf(stderr, "hoarder: %d published, %d busy\n", ok, busy);
		return 1;
	}
	rshare_device_close(dev);
	return 0;
}

static void case_shares(void)
{
	rshare_broker *b;
	rshare_share *sh;
	struct pub p;
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		printf("case_shares: needs root to become another uid; skipped\n");
		return;
	}
	REQUIRE_OK(rshare_broker_start(path, &b));
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(hoarder());
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The broker's own user is not limited by it. */
	pub_make(&p);
	CHECK_OK(rshare_broker_publish(path, "mine", p.dev, p.payload, p.len, NULL, &sh));
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	CHECK_OK(rshare_broker_stop(b)); /* withdraws the hoard */
}

/* ---- a list reply nobody reads ---- */

/* A client that asks for a long list and reads none of it was kept for
 * ever (its queued reply exempted it from the idle time), even as a
 * publisher: now dropped after the idle time, in the middle of the list. */
static void case_list(void)
{
	enum { SHARES = 700 };
	rshare_device *dev;
	rshare_broker *b;
	unsigned char m[16], r[RSHARE_PAYLOAD_MAX + 64];
	int pubs, s, fd, last_more = -1, eof = 0;

	setenv("RSHARE_BROKER_IDLE_MS", "300", 1);
	REQUIRE_OK(rshare_broker_start(path, &b));
	unsetenv("RSHARE_BROKER_IDLE_MS");
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	pubs = raw_connect(path);
	for (int i = 0; i < SHARES; i++) {
		char name[256];
		snprintf(name, sizeof(name), "list/%0200d", i);
		REQUIRE(raw_publish(pubs, name, fd, 1) == RSHARE_OK);
	}
	/* The lister, which publishes too (exempt from the idle time). */
	s = raw_connect(path);
	REQUIRE(raw_publish(s, "list/lister", fd, 1) == RSHARE_OK);
	raw_header(m, RAW_LIST, 0, 0);
	REQUIRE(send(s, m, 16, MSG_NOSIGNAL) == 16);
	usleep(1000000);
	for (int i = 0; i < 10000 && !eof; i++) {
		ssize_t k = recv(s, r, sizeof(r), MSG_DONTWAIT);
		if (k >= 16) {
			last_more = r[7] & 1;
		} else if (k == 0 || (k < 0 && errno == ECONNRESET)) {
			eof = 1;
		} else {
			usleep(10000); /* EAGAIN: an unfixed broker sends on */
			if (i > 200)
				break;
		}
	}
	CHECK(eof);
	CHECK(last_more == 1); /* cut in the middle */
	close(s);
	close(pubs);
	CHECK_OK(rshare_broker_stop(b));
	CHECK_OK(rshare_device_close(dev));
}

/* ---- a symlink for the directory ---- */

/* Another user's symlink in the broker's place, to a directory anyone can
 * write (as /tmp): the broker followed it (the target is root's) and its
 * socket was open to all, beside anything they put there. */
static void case_symlink(void)
{
	char open_dir[128], link[128], sock[160];
	rshare_broker *b;

	if (geteuid() != 0) {
		printf("case_symlink: needs root to make a link of another uid; skipped\n");
		return;
	}
	snprintf(open_dir, sizeof(open_dir), "%s/open", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(sock, sizeof(sock), "%s/b.sock", link);
	REQUIRE(mkdir(open_dir, 0777) == 0 && chmod(open_dir, 01777) == 0);
	REQUIRE(symlink(open_dir, link) == 0 && lchown(link, SQUATTER, SQUATTER) == 0);
	b = NULL;
	CHECK_ST(rshare_broker_start(sock, &b), RSHARE_E_PERM);
	CHECK_MSG("belongs to uid 4245");
	if (b)
		rshare_broker_stop(b);
	/* The link of this user (root) is followed as before. */
	REQUIRE(lchown(link, 0, 0) == 0);
	CHECK_OK(rshare_broker_start(sock, &b));
	CHECK_OK(rshare_broker_stop(b));
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A broker that accepts no connection (stopped, stuck, or its queue
 * flooded by another user): with its queue of connections full, a call
 * gives up after its 10 s bound (ETIMEDOUT) instead of waiting in connect()
 * forever, even with a signal every 200 ms (a handler without SA_RESTART:
 * each interrupts the wait, none restarts it), an event loop's attach
 * start fails at once, and nothing leaks. */
static void case_stuck(void)
{
	struct sigaction sa_alarm = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval every = { { 0, 200000 }, { 0, 200000 } }, off = { { 0, 0 }, { 0, 0 } };
	int l = raw_listen_backlog(path, 0), queued[4], n = 0, before;
	rshare_attach *op = NULL;
	struct timespec t0, t1;
	char json[256];
	size_t len;

	/* Fill its queue (a backlog of 0 holds one connection). */
	for (; n < 4; n++) {
		queued[n] = try_connect_flags(path, SOCK_NONBLOCK);
		if (queued[n] < 0) {
			REQUIRE(errno == EAGAIN);
			break;
		}
	}
	REQUIRE(n >= 1 && n < 4);
	before = settled_fds();

	REQUIRE(sigaction(SIGALRM, &sa_alarm, NULL) == 0);
	REQUIRE(setitimer(ITIMER_REAL, &every, NULL) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(rshare_broker_list(path, json, sizeof(json), &len) == RSHARE_E_IO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	REQUIRE(setitimer(ITIMER_REAL, &off, NULL) == 0);
	CHECK(rshare_last_errno() == ETIMEDOUT);
	CHECK(strstr(rshare_last_error(), "accepted no connection in 10000 ms") != NULL);
	/* It waited its bound, through the signals, and not much longer. */
	CHECK(t1.tv_sec - t0.tv_sec >= 9 && t1.tv_sec - t0.tv_sec <= 30);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(rshare_broker_attach_startv(path, "name", &op) == RSHARE_E_IO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(rshare_last_errno() == ETIMEDOUT);
	CHECK(strstr(rshare_last_error(), "accepts no connection now") != NULL);
	CHECK(op == NULL);
	CHECK(t1.tv_sec - t0.tv_sec <= 1); /* one attempt: no wait */
	CHECK(settled_fds() == before);

	for (int i = 0; i < n; i++)
		close(queued[i]);
	close(l);
	unlink(path);
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	make_endpoint(dir, sizeof(dir), path, sizeof(path));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

#define T_PROGRAM_test_broker_attack ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
