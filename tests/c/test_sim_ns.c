/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The table lock's liveness across PID namespaces and /proc views (issue
 * 18, item 2). Both cases need root (a PID namespace, a proc mount, other
 * uids); without it the test reports skipped (77) and says why.
 *   ns      two honest workers on one table, one in the host's PID
 *           namespace and one in a new one (unshare(CLONE_NEWPID), as two
 *           containers, each with its own /proc): VAR alloc/map/fill/check/free and PD
 *           alloc/export/import/free rounds for RSHARE_NS_SECONDS (2 s).
 *           Nothing may be lost (every call OK) or rewritten (every page
 *           keeps its owner's pattern). With pid-based liveness each saw
 *           the other's live holder as dead and took the lock.
 *   reuse   a holder dies with the lock; its pid goes to another user's
 *           process; the victim, a third user, sees /proc with hidepid=2
 *           (it can neither signal nor read that process): its next call
 *           must take the lock over, not answer BUSY while that one lives.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <time.h>

#include "sim_peer.h"


static double secs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct tally {
	int lost;      /* a call on our own object that failed */
	int rewritten; /* a page word not ours after we wrote it */
	int rounds;
};

/* One worker's rounds on dev until the deadline; the tally goes to out. */
static void worker(rshare_device *dev, int id, double seconds, int out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct tally t = { 0 };
	double end = secs() + seconds;

	while (secs() < end) {
		unsigned char blob[RSHARE_BLOB_MAX];
		rshare_var *v;
		rshare_pd *pd, *imp;
		uint64_t *words;
		size_t len;

		t.rounds++;
		if (rshare_var_alloc(dev, 0, &v) != RSHARE_OK) {
			t.lost++;
			continue;
		}
		if (rshare_var_map(v, (void **)&words) == RSHARE_OK) {
			uint64_t mark = (uint64_t)id << 56 | (uint64_t)t.rounds;
			for (size_t i = 0; i < page / 8; i++)
				words[i] = mark;
			sched_yield();
			for (size_t i = 0; i < page / 8; i++)
				if (words[i] != mark) {
					t.rewritten++;
					break;
				}
			t.lost += rshare_var_unmap(v) != RSHARE_OK;
		} else {
			t.lost++;
		}
		t.lost += rshare_var_free(v) != RSHARE_OK;
		if (rshare_pd_alloc(dev, &pd) != RSHARE_OK) {
			t.lost++;
			continue;
		}
		if (rshare_pd_export(pd, blob, sizeof(blob), &len) != RSHARE_OK ||
		    rshare_pd_import(dev, blob, len, &imp) != RSHARE_OK)
			t.lost++;
		else
			t.lost += rshare_pd_unimport(imp) != RSHARE_OK;
		t.lost += rshare_pd_free(pd) != RSHARE_OK;
	}
	(void)!write(out, &t, sizeof(t));
}

#define PER_SIDE 3 /* workers in each namespace: more than the CPUs, so
		     * holders get preempted and waiters judge their liveness */

/* PER_SIDE workers (ids first..) on dev; 0 when all ran as expected. */
static int workers(rshare_device *dev, int first, double seconds, int out)
{
	pid_t pids[PER_SIDE];
	int bad = 0, st;

	for (int i = 0; i < PER_SIDE; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			worker(dev, first + i, seconds, out);
			_exit(0);
		}
	}
	for (int i = 0; i < PER_SIDE; i++)
		bad |= pids[i] < 0 || waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
		       WEXITSTATUS(st);
	return bad;
}

static void sum_tallies(int fd, struct tally *sum)
{
	for (int i = 0; i < PER_SIDE; i++) {
		struct tally t;
		REQUIRE(read(fd, &t, sizeof(t)) == sizeof(t));
		sum->lost += t.lost;
		sum->rewritten += t.rewritten;
		sum->rounds += t.rounds;
	}
}

static void case_ns(void)
{
	const char *e = getenv("RSHARE_NS_SECONDS");
	double seconds = e && atof(e) > 0 ? atof(e) : 2.0;
	struct tally a = { 0 }, b = { 0 };
	rshare_device *dev;
	int pa[2], pb[2], st;
	pid_t host, ns;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE(pipe(pa) == 0 && pipe(pb) == 0);
	fflush(NULL);
	host = fork();
	REQUIRE(host >= 0);
	if (host == 0)
		_exit(workers(dev, 1, seconds, pa[1]));
	ns = fork();
	REQUIRE(ns >= 0);
	if (ns == 0) {
		/* The container: its first child is pid 1 of a new namespace,
		 * with a /proc of its own, as a container has. */
		pid_t init;
		if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0)
			_exit(2);
		init = fork();
		if (init == 0) {
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
			    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
				_exit(5);
			_exit(getpid() != 1 ? 3 : workers(dev, 1 + PER_SIDE, seconds, pb[1]));
		}
		_exit(init > 0 && waitpid(init, &st, 0) == init && WIFEXITED(st) ? WEXITSTATUS(st)
										 : 4);
	}
	REQUIRE(ns > 0);
	sum_tallies(pa[0], &a);
	sum_tallies(pb[0], &b);
	REQUIRE(waitpid(host, &st, 0) == host && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQUIRE(waitpid(ns, &st, 0) == ns);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* it ran as pid 1 of its own */
	printf("ns: host %d rounds, container %d rounds; lost %d + %d, rewritten %d + %d\n",
	       a.rounds, b.rounds, a.lost, b.lost, a.rewritten, b.rewritten);
	CHECK(a.rounds > 0 && b.rounds > 0);
	CHECK(a.lost == 0 && b.lost == 0);
	CHECK(a.rewritten == 0 && b.rewritten == 0);
	CHECK_OK(rshare_device_close(dev));
	close(pa[0]), close(pa[1]), close(pb[0]), close(pb[1]);
}

#define REUSER 4251
#define VICTIM 4252

/* pid 1 of a new PID namespace, with a private /proc mounted hidepid=2.
 * Exit 0 when the victim's call took the dead holder's lock over. */
static int reuse_sandbox(void)
{
	rshare_device *dev;
	struct sim_map *m;
	pid_t holder, reuser, victim;
	int fd, st, tries;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") != 0)
		return 10;
	if (rshare_device_open("sim0", &dev) || rshare_device_fd(dev, &fd))
		return 11;
	/* The holder: locks with the library's own code, dies holding it. */
	holder = fork();
	if (holder == 0) {
		if (sim_map_get(fd, &m) || sim_lock(m, fd))
			_exit(1);
		_exit(0);
	}
	if (holder < 0 || waitpid(holder, &st, 0) != holder || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return 12;
	/* Its pid to another user's process: the next pid is holder's. */
	for (tries = 0; tries < 20; tries++) {
		char last[16];
		int k = snprintf(last, sizeof(last), "%d", (int)holder - 1), f;

		f = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
		if (f < 0 || write(f, last, (size_t)k) != k)
			return 13;
		close(f);
		reuser = fork();
		if (reuser == 0) {
			if (setgid(REUSER) || setuid(REUSER))
				_exit(1);
			for (;;)
				pause();
		}
		if (reuser == holder)
			break;
		kill(reuser, SIGKILL);
		waitpid(reuser, NULL, 0);
	}
	if (tries == 20)
		return 14;
	victim = fork();
	if (victim == 0) {
		rshare_pd *pd;
		int s;

		if (setgid(VICTIM) || setuid(VICTIM))
			_exit(1);
		s = rshare_pd_alloc(dev, &pd);
		if (s != RSHARE_OK) {
			fprintf(stderr, "reuse: victim's alloc: %s: %s\n", rshare_status_name(s),
				rshare_last_error());
			_exit(2);
		}
		_exit(rshare_pd_free(pd) == RSHARE_OK ? 0 : 3);
	}
	st = victim > 0 && waitpid(victim, &st, 0) == victim && WIFEXITED(st)
		     ? WEXITSTATUS(st)
		     : 15;
	kill(reuser, SIGKILL);
	waitpid(reuser, NULL, 0);
	return st;
}

static void case_reuse(void)
{
	pid_t sandbox;
	int st;

	fflush(NULL);
	sandbox = fork();
	REQUIRE(sandbox >= 0);
	if (sandbox == 0) {
		pid_t init;
		if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0)
			_exit(20);
		init = fork();
		if (init == 0)
			_exit(reuse_sandbox());
		_exit(init > 0 && waitpid(init, &st, 0) == init && WIFEXITED(st) ? WEXITSTATUS(st)
										 : 21);
	}
	REQUIRE(waitpid(sandbox, &st, 0) == sandbox);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "reuse: sandbox status 0x%x\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void setup(void)
{
	setenv("RSHARE_SIM_LOCK_MS", "300", 1);
	if (geteuid() != 0) {
		printf("test_sim_ns: needs root (PID namespaces, a proc mount, other uids); "
		       "skipped\n");
		exit(77);
	}
}

#define T_PROGRAM_test_sim_ns ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, NULL)
