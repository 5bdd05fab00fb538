/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Attacks from a review of the rebuilt sim0, each a finding that once broke
 * a claim of sim_table.h, kept as a regression test:
 *  1. first locks in several threads at once (each its own table): the
 *     process's lock value was two plain variables written by whichever
 *     thread came first, so another could read the pid set and the value
 *     still 0, and "take" the lock by swapping 0 for 0 (ThreadSanitizer
 *     names the race; the plain build rarely loses it);
 *  2. a peer that keeps rewriting the lock word with ever new values of
 *     dead holders: the waiter's take-over CAS kept failing, and the
 *     take-over path went round without looking at the deadline, so the
 *     victim spun past the bound for as long as the peer went on;
 *  3. a fork while the process cannot open another fd (EMFILE): neither
 *     side could take a description of its own for its VAR page locks, so
 *     both kept the shared one, and the child unmapping its inherited copy
 *     dropped the parent's lock too; a new VAR then got the page the
 *     parent still mapped (aliased);
 *  4. a holder killed with the lock and not yet reaped (its parent is the
 *     waiter, say): kill(pid, 0) still finds a zombie, so the lock counted
 *     as held and every call got BUSY until someone reaped it. A process
 *     whose main thread has exited while its others run is no zombie,
 *     though: its lock still holds;
 *  5. (the start-time tag's lost bit: gone with the tag; a holder's
 *     liveness is an OFD lock now, and pid reuse is test_sim_ns's case);
 *  6. a write lease on the memfd, held by a peer that ignores SIGIO: the
 *     first VAR alloc of a process reopened the memfd through /proc/self/fd
 *     with the table locked, and open() waited fs.lease-break-time (45 s)
 *     for the lease: past the bound, and every other process BUSY.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#include "sim_peer.h"

#define BOUND_MS 200
#define THREADS 4

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* 1. Each thread's first lock, on its own table, at the same moment. */
static pthread_barrier_t start;

static void *first_lock(void *arg)
{
	rshare_device *dev = arg;
	rshare_pd *pd;
	int s;

	pthread_barrier_wait(&start);
	s = rshare_pd_alloc(dev, &pd);
	if (s == RSHARE_OK)
		s = rshare_pd_free(pd);
	return (void *)(intptr_t)s;
}

static void case_first_locks(void)
{
	rshare_device *dev[THREADS];
	pthread_t th[THREADS];
	void *ret;

	for (int i = 0; i < THREADS; i++)
		REQUIRE_OK(rshare_device_open("sim0", &dev[i]));
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&th[i], NULL, first_lock, dev[i]) == 0);
	for (int i = 0; i < THREADS; i++) {
		REQUIRE(pthread_join(th[i], &ret) == 0);
		CHECK_ST((int)(intptr_t)ret, RSHARE_OK);
	}
	pthread_barrier_destroy(&start);
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(rshare_device_close(dev[i]));
}

/* A pid no process has (kill gives ESRCH) but that the lock accepts as one. */
static uint32_t dead_pid(void)
{
	for (uint32_t pid = 4194303; pid > 300000; pid--)
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			return pid;
	REQUIRE(!"no free pid found");
	return 0;
}

/* On CPU cpu if there are two (best effort: the test holds without). */
static void pin_to(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* 2. The peer writes a new dead holder into the word without pause. */
static void case_lock_churn(void)
{
	cpu_set_t cpus;
	rshare_device *dev;
	uint32_t dead = dead_pid();
	pid_t peer;
	int fd;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	peer = fork();
	REQUIRE(peer >= 0);
	if (peer == 0) {
		struct sim_table *t = peer_map(fd, NULL);
		uint32_t me = (uint32_t)getpid();

		pin_to(1); /* beside the victim, not taking turns with it */

		/* Alternately a pid nobody has and our own (live) pid with a
		 * start tag that is not ours: the waiter's check of the latter
		 * reads /proc, a wide window for the word to change. */
		for (uint64_t n = 1;; n++)
			__atomic_store_n(&t->s.lock, (n << 33) | (n & 1 ? dead : me),
					 __ATOMIC_RELAXED);
	}
	{ /* the peer is at work before the victim starts */
		size_t n;
		struct sim_table *t = peer_map(fd, &n);

		while (__atomic_load_n(&t->s.lock, __ATOMIC_RELAXED) == 0)
			usleep(1000);
		munmap(t, n);
	}
	REQUIRE(sched_getaffinity(0, sizeof(cpus), &cpus) == 0);
	pin_to(0);
	/* Without the fix the first call never returns: the alarm ends the
	 * test (default action) well before ctest's timeout. */
	alarm(30);
	for (int i = 0; i < 10; i++) {
		uint64_t t0 = ms_now();
		rshare_pd *pd;
		int s = rshare_pd_alloc(dev, &pd);

		CHECK(s == RSHARE_OK || s == RSHARE_E_BUSY);
		CHECK(ms_now() - t0 < BOUND_MS + 1000);
		if (s == RSHARE_OK) {
			s = rshare_pd_free(pd);
			CHECK(s == RSHARE_OK || s == RSHARE_E_BUSY);
		}
	}
	alarm(0);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	kill_peer(peer);
	/* The peer is gone: its last value names a dead holder, taken over. */
	{
		rshare_pd *pd;
		CHECK_OK(rshare_pd_alloc(dev, &pd));
		CHECK_OK(rshare_pd_free(pd));
	}
	CHECK_OK(rshare_device_close(dev));
}

static uint32_t page_of(rshare_var *v)
{
	uint32_t page = UINT32_MAX, length;
	uint64_t off;

	CHECK_OK(rshare_var_attrs(v, &page, &length, &off));
	return page;
}

/* 3. The child of an fd-starved fork: close the inherited device (which
 * unmaps its copy of VAR 1), then as a fresh importer free VAR 1 and take
 * a new VAR. Exit 0: the new VAR is not on the page the parent maps. */
static int starved_child(int fd, const unsigned char *blob, size_t len, uint32_t p1,
			 rshare_device *inherited, int first_filler, int last_filler)
{
	rshare_device *dev;
	rshare_var *v1, *v2;

	if (rshare_device_close(inherited) != RSHARE_OK)
		return 2;
	for (int f = first_filler; f <= last_filler; f++)
		close(f);
	if (rshare_device_import(fd, &dev) || rshare_var_import(dev, blob, len, &v1) ||
	    rshare_var_free(v1))
		return 3;
	if (rshare_var_alloc(dev, 0, &v2))
		return 4;
	return page_of(v2) == p1 ? 1 : 0;
}

static void case_starved_fork(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_var *v1;
	struct rlimit old, low;
	uint32_t p1;
	size_t len;
	int fd, keep, first = -1, last = -1, status;
	pid_t child;
	void *a;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &v1));
	REQUIRE_OK(rshare_var_map(v1, &a)); /* this process's own description */
	p1 = page_of(v1);
	REQUIRE_OK(rshare_var_export(v1, blob, sizeof(blob), &len));
	keep = dup(fd); /* the child's own, after its inherited device is closed */
	REQUIRE(keep >= 0);

	/* No fd left: the fork handlers cannot reopen the table. */
	REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
	low = old;
	low.rlim_cur = 256;
	REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
	for (;;) {
		int f = dup(0);

		if (f < 0) {
			REQUIRE(errno == EMFILE);
			break;
		}
		if (first < 0)
			first = f;
		last = f;
	}
	REQUIRE(first >= 0);
	child = fork();
	REQUIRE(child >= 0);
	if (child == 0)
		_exit(starved_child(keep, blob, len, p1, dev, first, last));
	for (int f = first; f <= last; f++)
		close(f);
	close(keep);
	REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
	REQUIRE(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fprintf(stderr, "starved child: exit %d\n", WEXITSTATUS(status));
	CHECK(WEXITSTATUS(status) == 0); /* 1: the new VAR got our mapped page */

	/* VAR 1 was freed by the child; the mapping is ours to drop. */
	CHECK_OK(rshare_var_unmap(v1));
	CHECK_OK(rshare_var_unimport(v1));
	CHECK_OK(rshare_device_close(dev));
}

/* 4. A holder that died with the lock, still a zombie: taken over. */
static void case_unreaped_holder(void)
{
	rshare_device *dev;
	rshare_pd *pd;
	siginfo_t si;
	uint64_t t0;
	pid_t peer;
	int fd;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	peer = locked_peer(fd, NULL);
	kill(peer, SIGKILL);
	/* Wait for its death, but leave it unreaped. */
	REQUIRE(waitid(P_PID, (id_t)peer, &si, WEXITED | WNOWAIT) == 0);
	t0 = ms_now();
	CHECK_OK(rshare_pd_alloc(dev, &pd));
	CHECK(ms_now() - t0 < BOUND_MS);
	CHECK_OK(rshare_pd_free(pd));
	REQUIRE(waitpid(peer, NULL, 0) == peer);
	CHECK_OK(rshare_device_close(dev));
}

static void *wait_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* ... but a holder whose main thread left (pthread_exit) is alive. */
static void case_leaderless_holder(void)
{
	rshare_device *dev;
	rshare_pd *pd;
	int fd, p[2];
	pid_t peer;
	char c;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	REQUIRE(pipe(p) == 0);
	peer = fork();
	REQUIRE(peer >= 0);
	if (peer == 0) {
		struct sim_table *t = peer_map(fd, NULL);
		uint64_t zero = 0;
		pthread_t th;

		if (!__atomic_compare_exchange_n(&t->s.lock, &zero, peer_lock_value(fd), false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ||
		    pthread_create(&th, NULL, wait_forever, NULL) != 0)
			_exit(1);
		if (write(p[1], "L", 1) != 1)
			_exit(1);
		pthread_exit(NULL);
	}
	close(p[1]);
	REQUIRE(read(p[0], &c, 1) == 1);
	close(p[0]);
	/* Until its leader is a zombie (state Z in /proc/PID/stat). */
	for (int i = 0; i < 1000; i++) {
		char path[64], buf[512], *q;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)peer);
		f = fopen(path, "r");
		REQUIRE(f != NULL);
		q = fgets(buf, sizeof(buf), f);
		fclose(f);
		q = q ? strrchr(buf, ')') : NULL;
		if (q && q[2] == 'Z')
			break;
		usleep(1000);
	}
	CHECK_ST(rshare_pd_alloc(dev, &pd), RSHARE_E_BUSY);
	kill_peer(peer);
	CHECK_OK(rshare_pd_alloc(dev, &pd));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* 6. The victim's first lock meets a write lease: it answers within the
 * bound, and the table's lock word stays free all the while. */
static void case_lease_on_table(void)
{
	rshare_device *dev;
	struct sim_table *t;
	rshare_var *v;
	uint64_t t0;
	size_t len;
	int fd, p[2], s, wst = 0;
	pid_t lessee;
	char c;

	REQUIRE_OK(rshare_device_open("sim0", &dev)); /* nothing locked yet */
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	t = peer_map(fd, &len);
	REQUIRE(pipe(p) == 0);
	lessee = fork();
	REQUIRE(lessee >= 0);
	if (lessee == 0) {
		signal(SIGIO, SIG_IGN); /* the break notice changes nothing */
		c = fcntl(fd, F_SETLEASE, F_WRLCK) == 0 ? 'L' : 'x';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	REQUIRE(read(p[0], &c, 1) == 1);
	if (c != 'L') {
		printf("lease_on_table: this kernel refuses a write lease on a memfd; skipped\n");
		kill_peer(lessee);
		CHECK_OK(rshare_device_close(dev));
		return;
	}
	fflush(NULL);
	{
		pid_t watcher = fork();
		REQUIRE(watcher >= 0);
		if (watcher == 0) { /* exit 1 if the word is ever held */
			uint64_t until = ms_now() + BOUND_MS + 300;
			while (ms_now() < until)
				if (__atomic_load_n(&t->s.lock, __ATOMIC_RELAXED))
					_exit(1);
			_exit(0);
		}
		t0 = ms_now();
		s = rshare_var_alloc(dev, 0, &v);
		t0 = ms_now() - t0;
		REQUIRE(waitpid(watcher, &wst, 0) == watcher);
	}
	if (s == RSHARE_OK)
		CHECK_OK(rshare_var_free(v));
	else
		CHECK_MSG("lease");
	CHECK(s == RSHARE_OK || s == RSHARE_E_BUSY);
	CHECK(t0 < BOUND_MS + 500);
	CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0); /* never locked meanwhile */
	kill_peer(lessee);
	CHECK_OK(rshare_var_alloc(dev, 0, &v)); /* the lease gone: served */
	CHECK_OK(rshare_var_free(v));
	munmap(t, len);
	close(p[0]);
	close(p[1]);
	CHECK_OK(rshare_device_close(dev));
}

/* Before any lock: read once per process. first_locks runs first: nobody
 * has locked in this process yet. */
static void setup(void)
{
	setenv("RSHARE_SIM_LOCK_MS", "200", 1);
}

#define T_PROGRAM_test_sim_attack ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, NULL)
