/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Named sharing between unrelated processes: each side is this program
 * started afresh (fork + exec, no fd inherited but stdin/stdout/stderr),
 * through the `rshare serve` daemon and through a broker embedded in this
 * process. Publisher and attacher meet only by name, and prove it through
 * the VAR page: the publisher writes 0x1111 in word 0, the attacher checks
 * it and writes 0x2222 in word 1, the publisher checks that at the end.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/un.h>
#include <spawn.h>
#include <sys/wait.h>

#include "broker_util.h"

extern char **environ;

static char dir[64], path[100], path2[100];

/* ---- the helper processes ---- */

static rshare_var *share_objects(rshare_device *dev, const unsigned char *p, size_t n,
				 rshare_pd **pd)
{
	rshare_var *var;

	if (n < 44 || rshare_pd_import(dev, p, 44, pd) || rshare_var_import(dev, p + 44, n - 44, &var))
		return NULL;
	return var;
}

static int helper_publish(const char *ep, const char *name, int persistent)
{
	rshare_publish_opts o = { .size = sizeof(o),
				  .flags = persistent ? RSHARE_PUBLISH_PERSISTENT : 0 };
	struct pub p;
	rshare_share *sh;
	volatile uint32_t *page;
	void *addr;
	char c;

	pub_make(&p);
	if (rshare_var_map(p.var, &addr))
		return 2;
	page = addr;
	page[0] = 0x1111;
	if (rshare_broker_publish(ep, name, p.dev, p.payload, p.len, &o, &sh)) {
		fprintf(stderr, "publish: %s\n", rshare_last_error());
		return 3;
	}
	printf("ready\n");
	fflush(stdout);
	if (persistent)
		return 0; /* the broker keeps the context and so the objects */
	while (read(0, &c, 1) > 0)
		;
	return page[1] == 0x2222 ? 0 : 4;
}

static int helper_attach(const char *ep, const char *name, int timeout)
{
	unsigned char payload[512];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	volatile uint32_t *page;
	void *addr;
	size_t n;
	int st = rshare_broker_attach(ep, name, timeout, &dev, payload, sizeof(payload), &n);

	if (st) {
		fprintf(stderr, "attach: %s\n", rshare_last_error());
		return st == RSHARE_E_IO ? 10 : st == RSHARE_E_NOT_FOUND ? 11 : 12;
	}
	var = share_objects(dev, payload, n, &pd);
	if (!var || rshare_var_map(var, &addr))
		return 13;
	page = addr;
	if (page[0] != 0x1111)
		return 14;
	page[1] = 0x2222;
	return rshare_var_unimport(var) || rshare_pd_unimport(pd) || rshare_device_close(dev) ? 15 : 0;
}

/* ---- the test's side ---- */

struct child {
	pid_t pid;
	int in, out; /* its stdin (ours to close), its stdout */
};

static struct child spawn(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	struct child c;
	int in[2], out[2];

	REQUIRE(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	REQUIRE(posix_spawn(&c.pid, argv[0], &fa, NULL, argv, environ) == 0);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	c.in = in[1];
	c.out = out[0];
	return c;
}

static struct child helper(const char *role, const char *ep, const char *name, const char *arg)
{
	char *argv[] = { getenv("RSHARE_TEST_HELPER"), (char *)role, (char *)ep, (char *)name,
			 (char *)arg, NULL };
	return spawn(argv);
}

static int finish(struct child *c)
{
	int st;

	close(c->in);
	close(c->out);
	REQUIRE(waitpid(c->pid, &st, 0) == c->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int wait_ready(struct child *c)
{
	char buf[16] = { 0 };
	ssize_t r = read(c->out, buf, 6);
	return r == 6 && memcmp(buf, "ready\n", 6) == 0;
}

static struct child start_daemon(const char *ep)
{
	char *argv[] = { getenv("RSHARE_CLI"), "serve", "--socket", (char *)ep, NULL };
	struct child d = spawn(argv);
	char buf[16];
	size_t n;

	for (int i = 0; i < 500 && rshare_broker_list(ep, buf, sizeof(buf), &n); i++)
		usleep(10000);
	REQUIRE_OK(rshare_broker_list(ep, buf, sizeof(buf), &n));
	return d;
}

/* Two unrelated processes share a PD and a VAR by name. */
static void by_name(const char *ep)
{
	struct child p = helper("publish", ep, "x/a", "0"), a;

	REQUIRE(wait_ready(&p));
	a = helper("attach", ep, "x/a", "0");
	CHECK(finish(&a) == 0);
	CHECK(finish(&p) == 0);
}

/* The attacher comes first and waits for the name. */
static void attach_waits(const char *ep)
{
	struct child a = helper("attach", ep, "x/late", "20000"), p;

	usleep(200000);
	p = helper("publish", ep, "x/late", "0");
	REQUIRE(wait_ready(&p));
	CHECK(finish(&a) == 0);
	CHECK(finish(&p) == 0);
}

/* The publisher is killed: the name goes at once; what was attached stays. */
static void publisher_killed(const char *ep)
{
	struct child p = helper("publish", ep, "x/kill", "0");
	unsigned char payload[512], payload2[512];
	rshare_device *dev, *late;
	rshare_pd *pd, *pd2;
	rshare_var *var;
	volatile uint32_t *page;
	uint32_t h;
	void *addr;
	size_t n, n2;
	double t0;
	int st = RSHARE_OK;

	REQUIRE(wait_ready(&p));
	REQUIRE_OK(rshare_broker_attach(ep, "x/kill", 0, &dev, payload, sizeof(payload), &n));
	REQUIRE((var = share_objects(dev, payload, n, &pd)) != NULL);
	REQUIRE_OK(rshare_var_map(var, &addr));
	page = addr;
	kill(p.pid, SIGKILL);
	CHECK(finish(&p) == 128 + SIGKILL);
	/* Event-driven: the broker sees the connection close as the kernel
	 * closes it. The bound is loose only for loaded CI machines. */
	t0 = now_s();
	while (now_s() - t0 < 2.0 &&
	       (st = rshare_broker_attach(ep, "x/kill", 0, &late, payload2, sizeof(payload2),
					  &n2)) == 0) {
		rshare_device_close(late);
		usleep(2000);
	}
	CHECK_ST(st, RSHARE_E_NOT_FOUND);
	CHECK(now_s() - t0 < 0.5);
	/* The attacher's device and objects keep working. */
	CHECK(page[0] == 0x1111);
	page[2] = 0x3333;
	CHECK(page[2] == 0x3333);
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK_OK(rshare_pd_import(dev, payload, 44, &pd2));
	CHECK_OK(rshare_pd_unimport(pd2));
	CHECK_OK(rshare_var_unimport(var));
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* A persistent share outlives its publisher, objects included. */
static void persistent(const char *ep)
{
	struct child p = helper("publish", ep, "x/keep", "1");
	unsigned char payload[512];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	void *addr;
	size_t n;

	REQUIRE(wait_ready(&p));
	CHECK(finish(&p) == 0);
	REQUIRE_OK(rshare_broker_attach(ep, "x/keep", 0, &dev, payload, sizeof(payload), &n));
	var = share_objects(dev, payload, n, &pd);
	CHECK(var != NULL);
	if (var) {
		CHECK_OK(rshare_var_map(var, &addr));
		CHECK(((volatile uint32_t *)addr)[0] == 0x1111);
		CHECK_OK(rshare_var_unimport(var));
		CHECK_OK(rshare_pd_unimport(pd));
	}
	CHECK_OK(rshare_device_close(dev));
	CHECK_OK(rshare_broker_withdraw_name(ep, "x/keep"));
	CHECK_ST(rshare_broker_attach(ep, "x/keep", 0, &dev, payload, sizeof(payload), &n),
		 RSHARE_E_NOT_FOUND);
}

/* The broker is killed: waiting and new clients get E_IO; a restart on the
 * same path (its stale socket replaced) serves again. */
static struct child broker_killed(struct child d, const char *ep)
{
	struct child a = helper("attach", ep, "x/never", "-1");
	unsigned char payload[64];
	rshare_device *dev;
	size_t n;

	usleep(200000);
	kill(d.pid, SIGKILL);
	CHECK(finish(&d) == 128 + SIGKILL);
	CHECK(finish(&a) == 10); /* RSHARE_E_IO */
	CHECK_ST(rshare_broker_attach(ep, "x/a", 0, &dev, payload, sizeof(payload), &n), RSHARE_E_IO);
	CHECK(rshare_last_errno() == ECONNREFUSED);
	d = start_daemon(ep);
	by_name(ep);
	return d;
}

/* systemd socket activation: `rshare serve` without --socket serves the
 * listening socket passed as fd 3 when LISTEN_PID is its own pid, and
 * leaves the socket file (systemd's) in place when it stops. */
static void socket_activation(const char *ep)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[64];
	struct child d;
	struct stat st;
	size_t n;
	int s, status;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", ep);
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	REQUIRE(s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(s, 16) == 0);
	chmod(ep, 0666);
	d.pid = fork();
	if (d.pid == 0) {
		char pid[16];
		if (dup2(s, 3) < 0)
			_exit(127);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("LISTEN_PID", pid, 1);
		setenv("LISTEN_FDS", "1", 1);
		unsetenv("RSHARE_BROKER");
		unsetenv("XDG_RUNTIME_DIR");
		execl(getenv("RSHARE_CLI"), "rshare", "serve", (char *)NULL);
		_exit(127);
	}
	REQUIRE(d.pid > 0);
	close(s);
	for (int i = 0; i < 500 && rshare_broker_list(ep, buf, sizeof(buf), &n); i++)
		usleep(10000);
	CHECK_OK(rshare_broker_list(ep, buf, sizeof(buf), &n));
	by_name(ep);
	kill(d.pid, SIGTERM);
	REQUIRE(waitpid(d.pid, &status, 0) == d.pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(stat(ep, &st) == 0 && S_ISSOCK(st.st_mode)); /* systemd's, not removed */
	unlink(ep);
}

/* The shell commands: publish (persistent), shares, attach -- CMD. */
static void cli(const char *ep)
{
	const char *rs = getenv("RSHARE_CLI");
	char cmd[512], out[4096];
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s publish --socket %s --persistent cli/x >/dev/null", rs, ep);
	CHECK(system(cmd) == 0);
	snprintf(cmd, sizeof(cmd), "%s shares --socket %s --json", rs, ep);
	REQUIRE((f = popen(cmd, "r")) != NULL);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	CHECK(pclose(f) == 0);
	CHECK(strstr(out, "\"name\":\"cli/x\"") && strstr(out, "\"blobs\":[\"pd\",\"var\"]") &&
	      strstr(out, "\"persistent\":true"));
	/* CMD gets the device fd (inherited) and the blobs' text forms. */
	snprintf(cmd, sizeof(cmd),
		 "%s attach --socket %s cli/x -- sh -c 'test -e /proc/self/fd/$RSHARE_DEVICE_FD && "
		 "%s inspect $RSHARE_VAR'", rs, ep, rs);
	REQUIRE((f = popen(cmd, "r")) != NULL);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	CHECK(pclose(f) == 0);
	CHECK(strstr(out, "\"kind\":\"var\"") != NULL);
	/* rshare becomes CMD: CMD's exit status; 127 not found, 126 not runnable,
	 * with a message naming CMD. */
	snprintf(cmd, sizeof(cmd), "%s attach --socket %s cli/x -- sh -c 'exit 7'", rs, ep);
	CHECK(WEXITSTATUS(system(cmd)) == 7);
	snprintf(cmd, sizeof(cmd), "%s attach --socket %s cli/x -- /nonexistent/cmd 2>&1", rs, ep);
	REQUIRE((f = popen(cmd, "r")) != NULL);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	CHECK(WEXITSTATUS(pclose(f)) == 127);
	CHECK(strstr(out, "rshare attach: /nonexistent/cmd: No such file or directory") != NULL);
	snprintf(cmd, sizeof(cmd), "%s attach --socket %s cli/x -- /etc 2>/dev/null", rs, ep);
	CHECK(WEXITSTATUS(system(cmd)) == 126);
	/* A wait that ran out: exit status 5 (rshare(1), EXIT STATUS). */
	snprintf(cmd, sizeof(cmd), "%s attach --socket %s --timeout 100 cli/none 2>/dev/null", rs, ep);
	CHECK(WEXITSTATUS(system(cmd)) == 5);
	snprintf(cmd, sizeof(cmd), "%s shares --socket %s | grep -q persistent", rs, ep);
	CHECK(system(cmd) == 0);
	CHECK_OK(rshare_broker_withdraw_name(ep, "cli/x"));
}

static void setup(void)
{
	REQUIRE(getenv("RSHARE_TEST_HELPER") && getenv("RSHARE_CLI"));
	make_endpoint(dir, sizeof(dir), path, sizeof(path));
	snprintf(path2, sizeof(path2), "%s/embedded.sock", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

/* Through the `rshare serve` daemon, which then exits cleanly on SIGTERM. */
static void case_daemon(void)
{
	struct child d = start_daemon(path);
	struct stat st;

	by_name(path);
	attach_waits(path);
	publisher_killed(path);
	persistent(path);
	cli(path);
	d = broker_killed(d, path);
	kill(d.pid, SIGTERM);
	CHECK(finish(&d) == 0); /* a clean exit on SIGTERM */
	CHECK(stat(path, &st) != 0 && errno == ENOENT);
}

/* Socket activation, then the same through a broker embedded here. */
static void case_embedded(void)
{
	rshare_broker *b;

	socket_activation(path2);
	REQUIRE_OK(rshare_broker_start(path2, &b));
	by_name(path2);
	attach_waits(path2);
	publisher_killed(path2);
	persistent(path2);
	CHECK_OK(rshare_broker_stop(b));
}

#define T_PROGRAM_test_broker_xproc ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 5 && !strcmp(argv[1], "publish"))
		return helper_publish(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "attach"))
		return helper_attach(argv[2], argv[3], atoi(argv[4]));
	return T_RUN(setup, teardown, argc, argv);
}
