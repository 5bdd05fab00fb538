/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A broker under honest and hostile clients at once, for
 * RSHARE_STRESS_SECONDS (else the first argument, else 3 s, as in CI;
 * `cmake --build build --target stress` passes 60): honest attaches must
 * keep succeeding, each within 2 s, from start to end.
 *
 * Hostile clients (as uid 65534 when run as root, so the per-user limits
 * apply; else as this user), each a process looping until the end:
 *   linger     list requests carrying an fd whose close blocks (SO_LINGER)
 *   pipeline   attaches pipelined on new connections, replies never read
 *   lister     lists never read, connections left open for a while
 *   garbage    records of random bytes, empty records with fds
 *   slowloris  connections that never send anything
 * The honest side: a publisher (this process) and an attacher (a thread)
 * attaching and closing in a loop; the result line gives counts and the
 * slowest attach.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "broker_util.h"

static char dir[64], path[100];
static double end_at;

static void hostile_uid(void)
{
	if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
		_exit(100);
}

static void linger_loop(void)
{
	unsigned char m[16];

	raw_header(m, RAW_LIST, 0, 0);
	while (now_s() < end_at) {
		int l, fd = linger_fd(&l, 30), s = try_connect(path);
		if (s >= 0) {
			send_fds(s, m, 16, &fd, 1);
			close(s);
		}
		close(fd);
		usleep(20000);
		close(l);
	}
}

static void pipeline_loop(void)
{
	unsigned char m[64];
	int n = raw_attach(m, "stress/honest", 0, 0xffff);

	while (now_s() < end_at) {
		int s = try_connect(path);
		for (int k = 0; s >= 0 && k < 50; k++)
			if (send(s, m, n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
				break;
		usleep(5000);
		if (s >= 0)
			close(s);
	}
}

static void lister_loop(void)
{
	enum { HELD = 64 };
	int held[HELD], n = 0;
	unsigned char m[16];

	raw_header(m, RAW_LIST, 0, 0);
	for (int i = 0; i < HELD; i++)
		held[i] = -1;
	while (now_s() < end_at) {
		int s = try_connect(path);
		if (s >= 0)
			send(s, m, 16, MSG_NOSIGNAL);
		if (held[n] >= 0)
			close(held[n]);
		held[n] = s;
		n = (n + 1) % HELD;
		usleep(2000);
	}
}

static void garbage_loop(void)
{
	uint64_t x = 88172645463325252ull ^ (uint64_t)getpid();
	unsigned char buf[512];
	int p[2];

	if (pipe(p) != 0)
		return;
	while (now_s() < end_at) {
		int s = try_connect(path), fds[3] = { p[0], p[1], p[0] };
		size_t n;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		n = x % sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)(x >> (i % 56));
		if (n >= 16 && (x & 1))
			memcpy(buf, "RSBK\1\0", 6); /* past the magic, sometimes */
		if (s >= 0) {
			send_fds(s, buf, x & 2 ? 0 : n, fds, x & 4 ? 3 : 0);
			close(s);
		}
		usleep(1000);
	}
}

static void slowloris_loop(void)
{
	enum { HELD = 100 };
	int held[HELD], n = 0;

	for (int i = 0; i < HELD; i++)
		held[i] = -1;
	while (now_s() < end_at) {
		if (held[n] >= 0)
			close(held[n]);
		held[n] = try_connect(path);
		n = (n + 1) % HELD;
		usleep(10000);
	}
}

struct honest {
	int ok, failed;
	double slowest;
};

static void *attacher(void *arg)
{
	struct honest *h = arg;

	while (now_s() < end_at) {
		unsigned char got[2 * RSHARE_BLOB_MAX];
		rshare_device *d;
		double t0 = now_s(), took;
		size_t n;
		int st = rshare_broker_attach(path, "stress/honest", 0, &d, got, sizeof(got), &n);

		took = now_s() - t0;
		if (took > h->slowest)
			h->slowest = took;
		if (st == RSHARE_OK && took < 2) {
			h->ok++;
			rshare_device_close(d);
		} else {
			h->failed++;
			fprintf(stderr, "stress: honest attach %s after %.2f s: %s\n",
				rshare_status_name(st), took, rshare_last_error());
		}
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static void (*const loops[])(void) = { linger_loop, pipeline_loop, lister_loop,
					       garbage_loop, slowloris_loop };
	const char *e = getenv("RSHARE_STRESS_SECONDS");
	double seconds = e && atof(e) > 0 ? atof(e) : argc > 1 && atof(argv[1]) > 0 ? atof(argv[1]) : 3;
	uint32_t hostile_uids[1] = { 65534 };
	rshare_publish_opts opts = { .size = sizeof(opts), .n_uids = 1, .uids = hostile_uids };
	pid_t broker, hostile[sizeof(loops) / sizeof(loops[0])];
	struct honest h = { 0 };
	rshare_share *sh;
	struct pub p;
	pthread_t t;

	signal(SIGPIPE, SIG_IGN);
	make_endpoint(dir, sizeof(dir), path, sizeof(path));
	broker = broker_fork(path, NULL);
	pub_make(&p);
	/* The hostile uid may attach too: its pipelined attaches get fds. */
	REQUIRE_OK(rshare_broker_publish(path, "stress/honest", p.dev, p.payload, p.len, &opts,
					 &sh));
	end_at = now_s() + seconds;
	for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++) {
		hostile[i] = fork();
		REQUIRE(hostile[i] >= 0);
		if (hostile[i] == 0) {
			hostile_uid();
			loops[i]();
			_exit(0);
		}
	}
	REQUIRE(pthread_create(&t, NULL, attacher, &h) == 0);
	pthread_join(t, NULL);
	for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++) {
		kill(hostile[i], SIGKILL);
		waitpid(hostile[i], NULL, 0);
	}
	printf("stress: %.0f s, %d honest attaches, %d failed, slowest %.3f s\n", seconds, h.ok,
	       h.failed, h.slowest);
	CHECK(h.failed == 0);
	CHECK(h.ok >= (int)seconds * 10);
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	broker_kill(broker, path);
	rmdir(dir);
	TEST_DONE();
}
