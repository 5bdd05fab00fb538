/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker inside one process (an embedded broker, clients on other
 * threads and in forked children): endpoints, names, publish / attach /
 * list / withdraw, the uid and gid policy against real other uids, hostile
 * clients, scale and fd hygiene. Cross-process sharing between unrelated
 * processes and the daemon: test_broker_xproc.c.
 */
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "broker_util.h"

static char dir[64], path[100];

static void case_endpoints(void)
{
	char buf[256];
	size_t n;

	setenv("RSHARE_BROKER", "/x/y.sock", 1);
	CHECK_OK(rshare_broker_default_endpoint(buf, sizeof(buf), &n));
	CHECK(strcmp(buf, "/x/y.sock") == 0 && n == 9);
	unsetenv("RSHARE_BROKER");
	setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
	CHECK_OK(rshare_broker_default_endpoint(buf, sizeof(buf), &n));
	CHECK(strcmp(buf, "/run/user/7/rshare/broker.sock") == 0);
	unsetenv("XDG_RUNTIME_DIR");
	CHECK_OK(rshare_broker_default_endpoint(buf, sizeof(buf), &n));
	CHECK(strcmp(buf, geteuid() ? buf : "/run/rshare/broker.sock") == 0);
	CHECK_ST(rshare_broker_default_endpoint(buf, 3, &n), RSHARE_E_NOSPACE);
	CHECK(n == strlen(buf));
	memset(buf, 'a', 200);
	buf[200] = '\0';
	setenv("RSHARE_BROKER", buf, 1);
	CHECK_ST(rshare_broker_default_endpoint(buf, sizeof(buf), &n), RSHARE_E_INVAL);
	unsetenv("RSHARE_BROKER");
}

/* Start, second start, stale socket, something else in the way, the
 * directory made 0700. */
static void case_start_stop(void)
{
	rshare_broker *b, *b2;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char sub[160], got[160];
	struct stat st;
	size_t n;
	int s;

	CHECK_ST(rshare_broker_start(path, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_broker_start("", &b), RSHARE_E_INVAL);
	REQUIRE_OK(rshare_broker_start(path, &b));
	CHECK_OK(rshare_broker_endpoint(b, got, sizeof(got), &n));
	CHECK(strcmp(got, path) == 0);
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	CHECK_ST(rshare_broker_start(path, &b2), RSHARE_E_BUSY);
	CHECK_MSG("live broker");
	CHECK_OK(rshare_broker_stop(b));
	CHECK(stat(path, &st) != 0 && errno == ENOENT);
	CHECK_ST(rshare_broker_stop(b), RSHARE_E_STALE);
	CHECK_ST(rshare_broker_endpoint(b, got, sizeof(got), &n), RSHARE_E_STALE);

	/* A socket left by a dead broker: bound, never listened on. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	REQUIRE(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(s);
	CHECK_OK(rshare_broker_start(path, &b));
	CHECK_OK(rshare_broker_stop(b));
	/* A file that is not a socket is never removed. */
	fclose(fopen(path, "w"));
	CHECK_ST(rshare_broker_start(path, &b), RSHARE_E_BUSY);
	CHECK_MSG("not a socket");
	unlink(path);
	/* The directory is created 0700. */
	snprintf(sub, sizeof(sub), "%s/sub/b.sock", dir);
	CHECK_OK(rshare_broker_start(sub, &b));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
	CHECK_OK(rshare_broker_stop(b));
}

static void test_names(void)
{
	static const char *const bad[] = { "", "a b", "/a", "a/", "a//b", "a\\b", "caf\xc3\xa9",
					   "x;y", "a\nb" };
	struct pub p;
	rshare_share *sh;
	rshare_device *d;
	char big[300];
	size_t n;

	pub_make(&p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_ST(rshare_broker_publish(path, bad[i], p.dev, NULL, 0, NULL, &sh),
			 RSHARE_E_INVAL);
		CHECK_ST(rshare_broker_attach(path, bad[i], 0, &d, NULL, 0, &n), RSHARE_E_INVAL);
		CHECK_ST(rshare_broker_withdraw_name(path, bad[i]), RSHARE_E_INVAL);
	}
	memset(big, 'n', sizeof(big));
	big[256] = '\0';
	CHECK_ST(rshare_broker_publish(path, big, p.dev, NULL, 0, NULL, &sh), RSHARE_E_INVAL);
	big[255] = '\0';
	CHECK_OK(rshare_broker_publish(path, big, p.dev, NULL, 0, NULL, &sh));
	CHECK_OK(rshare_broker_withdraw(sh));
	CHECK_OK(rshare_broker_publish(path, "Team-1/run_2.b/x", p.dev, NULL, 0, NULL, &sh));
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
}

static void test_share_cycle(void)
{
	unsigned char got[512];
	char list[2048];
	struct pub p;
	rshare_share *sh, *sh2;
	rshare_device *d;
	rshare_pd *pd;
	rshare_var *var;
	uint32_t h, h2;
	uint32_t uid = 1234;
	rshare_publish_opts o = { .size = sizeof(o), .n_uids = 1, .uids = &uid };
	rshare_publish_opts bad = o;
	volatile uint32_t *mine, *theirs;
	void *addr;
	size_t n;

	pub_make(&p);
	CHECK_ST(rshare_broker_publish(path, "c/1", p.dev, NULL, 1, NULL, &sh), RSHARE_E_INVAL);
	CHECK_ST(rshare_broker_publish(path, "c/1", NULL, NULL, 0, NULL, &sh), RSHARE_E_INVAL);
	bad.flags = 8;
	CHECK_ST(rshare_broker_publish(path, "c/1", p.dev, NULL, 0, &bad, &sh), RSHARE_E_INVAL);
	bad = o;
	bad.size = 2;
	CHECK_ST(rshare_broker_publish(path, "c/1", p.dev, NULL, 0, &bad, &sh), RSHARE_E_INVAL);
	bad = o;
	bad.n_uids = RSHARE_SHARE_IDS_MAX + 1;
	CHECK_ST(rshare_broker_publish(path, "c/1", p.dev, NULL, 0, &bad, &sh), RSHARE_E_INVAL);
	CHECK_ST(rshare_broker_attach(path, "c/1", 0, &d, got, sizeof(got), &n),
		 RSHARE_E_NOT_FOUND);

	REQUIRE_OK(rshare_broker_publish(path, "c/1", p.dev, p.payload, p.len, &o, &sh));
	CHECK_ST(rshare_broker_publish(path, "c/1", p.dev, NULL, 0, NULL, &sh2), RSHARE_E_BUSY);
	CHECK_MSG("already published");
	/* Too small: nothing attached, the size needed told. */
	n = 0;
	CHECK_ST(rshare_broker_attach(path, "c/1", 0, &d, got, p.len - 1, &n), RSHARE_E_NOSPACE);
	CHECK(n == p.len);
	CHECK_ST(rshare_broker_attach(path, "c/1", 0, &d, NULL, 0, &n), RSHARE_E_NOSPACE);
	REQUIRE_OK(rshare_broker_attach(path, "c/1", 0, &d, got, sizeof(got), &n));
	CHECK(n == p.len && memcmp(got, p.payload, n) == 0);
	/* The attached device imports the objects; the VAR page is shared. */
	CHECK_OK(rshare_pd_import(d, got, 44, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK_OK(rshare_pd_handle(p.pd, &h2));
	CHECK(h == h2);
	REQUIRE_OK(rshare_var_import(d, got + 44, n - 44, &var));
	REQUIRE_OK(rshare_var_map(var, &addr));
	theirs = addr;
	REQUIRE_OK(rshare_var_map(p.var, &addr));
	mine = addr;
	theirs[3] = 0xfeedf00d;
	CHECK(mine[3] == 0xfeedf00d);
	CHECK_OK(rshare_var_unimport(var));
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_device_close(d));

	CHECK_OK(rshare_broker_list(path, list, sizeof(list), &n));
	CHECK(strstr(list, "\"name\":\"c/1\"") && strstr(list, "\"blobs\":[\"pd\",\"var\"]") &&
	      strstr(list, "\"attaches\":1") && strstr(list, "\"payload_size\":104") &&
	      strstr(list, "\"persistent\":false"));
	CHECK_ST(rshare_broker_list(path, list, n, &n), RSHARE_E_NOSPACE);

	CHECK_OK(rshare_broker_withdraw(sh));
	CHECK_ST(rshare_broker_withdraw(sh), RSHARE_E_STALE);
	CHECK_ST(rshare_broker_attach(path, "c/1", 0, &d, got, sizeof(got), &n),
		 RSHARE_E_NOT_FOUND);
	/* A payload that is not blobs is carried as is. */
	REQUIRE_OK(rshare_broker_publish(path, "c/raw", p.dev, "hello", 5, NULL, &sh));
	CHECK_OK(rshare_broker_list(path, list, sizeof(list), &n));
	CHECK(strstr(list, "\"blobs\":null") != NULL);
	/* Withdrawal by name (the owner), then the handle's withdrawal is a
	 * no-op. */
	CHECK_OK(rshare_broker_withdraw_name(path, "c/raw"));
	CHECK_ST(rshare_broker_withdraw_name(path, "c/raw"), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
}

/* A child that becomes uid (and gid, groups) and tries the shares. Exit
 * code: bit i set when step i did not give what it should. */
static int as_other(uid_t uid, gid_t gid, gid_t extra)
{
	rshare_device *d;
	unsigned char got[512];
	size_t n;
	int bad = 0;

	if (setgroups(1, &extra) || setgid(gid) || setuid(uid))
		return 255;
	if (rshare_broker_attach(path, "p/closed", 0, &d, got, sizeof(got), &n) != RSHARE_E_PERM)
		bad |= 1;
	if (rshare_broker_withdraw_name(path, "p/closed") != RSHARE_E_PERM)
		bad |= 2;
	if (rshare_broker_attach(path, "p/uid", 0, &d, got, sizeof(got), &n) != RSHARE_OK)
		bad |= 4;
	if (rshare_broker_attach(path, "p/gid", 0, &d, got, sizeof(got), &n) != RSHARE_OK)
		bad |= 8;
	if (rshare_broker_attach(path, "p/group", 0, &d, got, sizeof(got), &n) != RSHARE_OK)
		bad |= 16;
	return bad;
}

static void test_policy(void)
{
	uint32_t nobody = 65534, grp = 4242;
	rshare_publish_opts by_uid = { .size = sizeof(by_uid), .n_uids = 1, .uids = &nobody };
	rshare_publish_opts by_gid = { .size = sizeof(by_gid), .n_gids = 1, .gids = &nobody };
	rshare_publish_opts by_grp = { .size = sizeof(by_grp), .n_gids = 1, .gids = &grp };
	rshare_share *s1, *s2, *s3, *s4;
	struct pub p;
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		printf("test_policy: needs root to become other uids; skipped\n");
		return;
	}
	pub_make(&p);
	REQUIRE_OK(rshare_broker_publish(path, "p/closed", p.dev, p.payload, p.len, NULL, &s1));
	REQUIRE_OK(rshare_broker_publish(path, "p/uid", p.dev, p.payload, p.len, &by_uid, &s2));
	REQUIRE_OK(rshare_broker_publish(path, "p/gid", p.dev, p.payload, p.len, &by_gid, &s3));
	REQUIRE_OK(rshare_broker_publish(path, "p/group", p.dev, p.payload, p.len, &by_grp, &s4));
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(as_other(65534, 65534, 4242));
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st))
		fprintf(stderr, "policy child: failed steps 0x%x\n", WEXITSTATUS(st));
	CHECK(WEXITSTATUS(st) == 0);
	/* Another uid without the group: the group share refuses it too. */
	pid = fork();
	if (pid == 0)
		_exit(as_other(4243, 4243, 4243) == (4 | 8 | 16) ? 0 : 1);
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_OK(rshare_broker_withdraw(s1));
	CHECK_OK(rshare_broker_withdraw(s2));
	CHECK_OK(rshare_broker_withdraw(s3));
	CHECK_OK(rshare_broker_withdraw(s4));
	pub_free(&p);
}

static void put_hdr(unsigned char *m, int version, int type, uint32_t len)
{
	memcpy(m, "RSBK", 4);
	m[4] = (unsigned char)version;
	m[5] = 0;
	m[6] = (unsigned char)type;
	m[7] = 0;
	memcpy(m + 8, &len, 4);
	memset(m + 12, 0, 4);
}

/* Send msg (with the given fds) on a new connection; the reply's status. */
static int32_t hostile(const void *msg, size_t len, const int *fds, int nfds)
{
	int s = raw_connect(path);
	int32_t st;
	char c;

	REQUIRE(send_fds(s, msg, len, fds, nfds) == (int)len);
	st = raw_reply_status(s);
	/* Then the broker hangs up (a protocol error ends the connection). */
	if (st == RSHARE_E_PROTOCOL && recv(s, &c, 1, 0) != 0)
		st = INT32_MIN + 1;
	close(s);
	return st;
}

static void test_hostile(void)
{
	static unsigned char big[80000];
	unsigned char m[256];
	rshare_device *d;
	unsigned char got[512];
	int silent[50], pipefd[2], fds[3];
	struct pub p;
	rshare_share *sh;
	size_t n;

	pub_make(&p);
	REQUIRE_OK(rshare_broker_publish(path, "h/ok", p.dev, p.payload, p.len, NULL, &sh));
	/* Silent clients take nothing from the others. */
	for (int i = 0; i < 50; i++)
		silent[i] = raw_connect(path);
	CHECK_ST(hostile("hello, broker", 13, NULL, 0), RSHARE_E_PROTOCOL);
	put_hdr(m, 2, 4, 0);
	CHECK_ST(hostile(m, 16, NULL, 0), RSHARE_E_PROTOCOL); /* newer version */
	put_hdr(m, 1, 4, 100);
	CHECK_ST(hostile(m, 20, NULL, 0), RSHARE_E_PROTOCOL); /* truncated */
	put_hdr(m, 1, 9, 0);
	CHECK_ST(hostile(m, 16, NULL, 0), RSHARE_E_PROTOCOL); /* unknown type */
	put_hdr(m, 1, 2, 12 + 4);
	memset(m + 16, 0, 12);
	m[24] = 4; /* attach, name length 4 */
	memcpy(m + 28, "h/ok", 4);
	m[24] = 200; /* name length beyond the body */
	CHECK_ST(hostile(m, 32, NULL, 0), RSHARE_E_PROTOCOL);
	m[24] = 4;
	memcpy(m + 28, "h o", 4);
	CHECK_ST(hostile(m, 32, NULL, 0), RSHARE_E_INVAL);
	memcpy(m + 28, "h/ok", 4);
	REQUIRE(pipe(pipefd) == 0);
	CHECK_ST(hostile(m, 32, pipefd, 1), RSHARE_E_PROTOCOL); /* attach with an fd */
	put_hdr(big, 1, 1, sizeof(big) - 16);
	CHECK_ST(hostile(big, sizeof(big), NULL, 0), RSHARE_E_PROTOCOL); /* oversized */
	/* A publish of a pipe: not a device. */
	put_hdr(m, 1, 1, 16 + 4);
	memset(m + 16, 0, 16);
	m[20] = 4;
	memcpy(m + 32, "h/pp", 4);
	CHECK_ST(hostile(m, 36, pipefd, 1), RSHARE_E_NODEV);
	fds[0] = pipefd[0];
	fds[1] = pipefd[1];
	fds[2] = pipefd[0];
	/* Three fds, none announced extra: three for the device, which has
	 * one or two (command fd, ledger). */
	CHECK_ST(hostile(m, 36, fds, 3), RSHARE_E_PROTOCOL);
	/* Extra fds (since 1.2, announced at body offset 10) must be sealed
	 * memfds: pipes are refused. */
	m[26] = 2;
	CHECK_ST(hostile(m, 36, fds, 3), RSHARE_E_FD_MISMATCH);
	m[26] = 0;
	close(pipefd[0]);
	close(pipefd[1]);
	/* A reply reader that never reads: dropped, nobody else waits. */
	{
		int s = raw_connect(path);
		int sent = 0;
		put_hdr(m, 1, 4, 0);
		for (int i = 0; i < 2000; i++)
			sent += send(s, m, 16, MSG_DONTWAIT | MSG_NOSIGNAL) == 16;
		CHECK(sent > 0);
		close(s);
	}
	/* Everyone else is still served. */
	CHECK_OK(rshare_broker_attach(path, "h/ok", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	/* The silent ones are told and closed after the idle time (300 ms
	 * here, RSHARE_BROKER_IDLE_MS). */
	for (int i = 0; i < 50; i++) {
		char c;
		CHECK(raw_reply_status(silent[i]) == RSHARE_E_PROTOCOL);
		CHECK(recv(silent[i], &c, 1, 0) == 0);
		close(silent[i]);
	}
	/* The connection attach keeps, closed by the broker's idle timeout
	 * meanwhile: the next attach notices and connects afresh. */
	CHECK_OK(rshare_broker_attach(path, "h/ok", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	usleep(450000);
	CHECK_OK(rshare_broker_attach(path, "h/ok", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
}

/* ---- scale ---- */

#define ATTACHERS 100

struct waiter {
	pthread_t t;
	int index, status;
	unsigned char payload[256];
	size_t len;
};

static void *wait_attach(void *arg)
{
	struct waiter *w = arg;
	char name[32];
	rshare_device *d;
	rshare_pd *pd;

	snprintf(name, sizeof(name), "late/%d", w->index % 10);
	w->status = rshare_broker_attach(path, name, 20000, &d, w->payload, sizeof(w->payload),
					 &w->len);
	if (w->status)
		return NULL;
	w->status = rshare_pd_import(d, w->payload, 44, &pd);
	if (!w->status)
		w->status = rshare_pd_unimport(pd);
	if (!w->status)
		w->status = rshare_device_close(d);
	return NULL;
}

static void test_scale(void)
{
	static rshare_share *many[1000];
	static struct waiter w[ATTACHERS];
	rshare_share *late[10];
	struct pub p;
	char name[32], *list;
	size_t n;
	int count = 0;

	pub_make(&p);
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "many/%04d", i);
		REQUIRE_OK(rshare_broker_publish(path, name, p.dev, p.payload, p.len, NULL, &many[i]));
	}
	CHECK_ST(rshare_broker_list(path, NULL, 0, &n), RSHARE_E_NOSPACE);
	list = malloc(n + 1);
	REQUIRE(list);
	CHECK_OK(rshare_broker_list(path, list, n + 1, &n));
	for (char *q = strstr(list, "\"name\":\"many/"); q; q = strstr(q + 1, "\"name\":\"many/"))
		count++;
	CHECK(count == 1000);
	CHECK(strstr(list, "many/0000") < strstr(list, "many/0999")); /* sorted */
	free(list);

	/* 100 attachers at once, waiting for names published after they ask. */
	for (int i = 0; i < ATTACHERS; i++) {
		w[i].index = i;
		REQUIRE(pthread_create(&w[i].t, NULL, wait_attach, &w[i]) == 0);
	}
	usleep(200000);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "late/%d", i);
		REQUIRE_OK(rshare_broker_publish(path, name, p.dev, p.payload, p.len, NULL, &late[i]));
	}
	for (int i = 0; i < ATTACHERS; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].status)
			fprintf(stderr, "attacher %d: %s\n", i, rshare_status_name(w[i].status));
		CHECK(w[i].status == RSHARE_OK && w[i].len == p.len);
	}
	for (int i = 0; i < 10; i++)
		CHECK_OK(rshare_broker_withdraw(late[i]));
	for (int i = 0; i < 1000; i++)
		CHECK_OK(rshare_broker_withdraw(many[i]));
	pub_free(&p);
}

/* The fds of this process (broker included) come back to where they were
 * after many cycles. */
static void test_fd_cycles(int cycles)
{
	unsigned char got[512];
	struct pub p;
	rshare_share *sh;
	rshare_device *d;
	int before, bad = 0;
	size_t n;

	pub_make(&p);
	/* A first cycle makes the connection attach keeps. */
	REQUIRE_OK(rshare_broker_publish(path, "cycle", p.dev, p.payload, p.len, NULL, &sh));
	REQUIRE_OK(rshare_broker_attach(path, "cycle", 0, &d, got, sizeof(got), &n));
	CHECK_OK(rshare_device_close(d));
	CHECK_OK(rshare_broker_withdraw(sh));
	before = settled_fds();
	for (int i = 0; i < cycles && !bad; i++) {
		bad |= rshare_broker_publish(path, "cycle", p.dev, p.payload, p.len, NULL, &sh) != 0;
		bad |= rshare_broker_attach(path, "cycle", 0, &d, got, sizeof(got), &n) != 0;
		bad |= !bad && rshare_device_close(d) != 0;
		bad |= !bad && rshare_broker_withdraw(sh) != 0;
		if (bad)
			fprintf(stderr, "cycle %d: %s\n", i, rshare_last_error());
	}
	CHECK(!bad);
	CHECK(settled_fds() == before);
	pub_free(&p);
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

/* fn against a broker of its own with a short idle time; the broker, once
 * stopped, leaves no fd behind. */
static void with_broker(void (*fn)(void))
{
	rshare_broker *b;
	int fds0 = count_fds();

	setenv("RSHARE_BROKER_IDLE_MS", "300", 1);
	REQUIRE_OK(rshare_broker_start(path, &b));
	fn();
	CHECK_OK(rshare_broker_stop(b));
	unsetenv("RSHARE_BROKER_IDLE_MS");
	CHECK(count_fds() == fds0);
}

static void case_names(void)
{
	with_broker(test_names);
}

static void case_share_cycle(void)
{
	with_broker(test_share_cycle);
}

static void case_policy(void)
{
	with_broker(test_policy);
}

static void case_hostile(void)
{
	with_broker(test_hostile);
}

static void case_scale(void)
{
	with_broker(test_scale);
}

/* The fd count with the default idle time: the connection this process
 * keeps for attach must not be closed by the broker halfway. */
static void case_fd_cycles(void)
{
	rshare_broker *b;
	int fds0 = count_fds();

	REQUIRE_OK(rshare_broker_start(path, &b));
	test_fd_cycles(10000);
	CHECK_OK(rshare_broker_stop(b));
	CHECK(count_fds() == fds0);
}

#define T_PROGRAM_test_broker ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
