/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Attach from an event loop (since 1.2): 100 attach operations driven from
 * one poll() loop against a broker in another process, half of them
 * cancelled midway; afterwards this process holds no fd of them and the
 * broker no waiting request (rshare_broker_waiting() and `rshare shares
 * --waiting --json`). Also: a share too large for the first buffer is kept
 * for the next call, rshare_attach_wait() ends on a signal only when asked,
 * an operation whose broker stops fails cleanly, and rshare_channel_recv()
 * on a non-blocking socket answers RSHARE_E_AGAIN and consumes nothing,
 * and reads a 64 KiB stream message whole though it arrives in pieces.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "broker_util.h"

#define OPS 100
#define NAME "loop/share"

static char dir[64], path[100];

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A broker in a child process; its pid. Returns once it listens. */
static pid_t broker_child(void)
{
	int ready[2];
	pid_t pid;
	char c;

	REQUIRE(pipe(ready) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_broker *b;
		sigset_t set;
		int sig;

		close(ready[0]);
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		if (rshare_broker_start(path, &b) != RSHARE_OK)
			_exit(2);
		if (write(ready[1], "r", 1) != 1)
			_exit(3);
		sigwait(&set, &sig);
		_exit(rshare_broker_stop(b) == RSHARE_OK ? 0 : 4);
	}
	close(ready[1]);
	REQUIRE(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	return pid;
}

/* How many attaches wait at the broker, by rshare_broker_waiting(). */
static int waiting_count(void)
{
	char json[65536];
	size_t len;
	int n = 0;

	REQUIRE_OK(rshare_broker_waiting(path, json, sizeof(json), &len));
	for (const char *p = json; (p = strstr(p, "\"name\":")); p++)
		n++;
	return n;
}

/* The output of `rshare ARGS... --socket path`. */
static void cli_output(const char *args, char *out, size_t cap)
{
	char cmd[512];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "'%s' %s --socket '%s'", getenv("RSHARE_CLI"), args, path);
	f = popen(cmd, "r");
	REQUIRE(f != NULL);
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	CHECK(pclose(f) == 0);
}

static void case_poll_loop(void)
{
	rshare_attach *op[OPS];
	rshare_device *dev;
	struct pollfd pfd[OPS];
	int map[OPS], fds_before, fds_published, done = 0, cancelled = 0, fd;
	unsigned char small[8], payload[2 * RSHARE_BLOB_MAX];
	size_t len;
	struct pub p;
	rshare_share *sh;
	static char out[65536];

	fds_before = count_fds();
	for (int i = 0; i < OPS; i++) {
		REQUIRE_OK(rshare_broker_attach_start(path, NAME, &op[i]));
		REQUIRE_OK(rshare_attach_fd(op[i], &fd));
		CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	}
	CHECK(count_fds() == fds_before + OPS);
	CHECK(waiting_count() == OPS);
	cli_output("shares --waiting --json", out, sizeof(out));
	CHECK(strstr(out, "\"name\":\"" NAME "\"") != NULL);

	/* Nothing published yet: nothing readable, finish says AGAIN and the
	 * operation goes on. */
	for (int i = 0; i < OPS; i++) {
		REQUIRE_OK(rshare_attach_fd(op[i], &pfd[i].fd));
		pfd[i].events = POLLIN;
	}
	CHECK(poll(pfd, OPS, 50) == 0);
	CHECK_ST(rshare_attach_finish(op[0], &dev, payload, sizeof(payload), &len), RSHARE_E_AGAIN);
	CHECK(rshare_last_errno() == EAGAIN);

	/* Midway: cancel every second one. */
	for (int i = 0; i < OPS; i += 2) {
		CHECK_OK(rshare_attach_cancel(op[i]));
		CHECK_ST(rshare_attach_cancel(op[i]), RSHARE_E_STALE);
		CHECK_ST(rshare_attach_fd(op[i], &fd), RSHARE_E_STALE);
		CHECK_ST(rshare_attach_finish(op[i], &dev, payload, sizeof(payload), &len),
			 RSHARE_E_STALE);
		cancelled++;
	}
	CHECK(count_fds() == fds_before + OPS - cancelled);
	CHECK(waiting_count() == OPS - cancelled);

	/* The publisher appears; the loop collects the rest. */
	pub_make(&p);
	REQUIRE_OK(rshare_broker_publish(path, NAME, p.dev, p.payload, p.len, NULL, &sh));
	fds_published = count_fds();
	for (uint64_t deadline = ms_now() + 10000; done < OPS - cancelled && ms_now() < deadline;) {
		int n = 0;

		for (int i = 1; i < OPS; i += 2) {
			if (!op[i])
				continue;
			REQUIRE_OK(rshare_attach_fd(op[i], &pfd[n].fd));
			pfd[n].events = POLLIN;
			map[n++] = i;
		}
		REQUIRE(poll(pfd, (nfds_t)n, 1000) >= 0);
		for (int k = 0; k < n; k++) {
			int i = map[k], st;

			if (!pfd[k].revents)
				continue;
			/* A buffer too small: told the size, the share is kept. */
			if (i % 10 == 1) {
				CHECK_ST(rshare_attach_finish(op[i], &dev, small, sizeof(small), &len),
					 RSHARE_E_NOSPACE);
				CHECK(len == p.len);
			}
			st = rshare_attach_finish(op[i], &dev, payload, sizeof(payload), &len);
			if (st == RSHARE_E_AGAIN)
				continue;
			CHECK_OK(st);
			if (st)
				continue;
			CHECK(len == p.len && memcmp(payload, p.payload, len) == 0);
			{
				rshare_pd *pd;
				CHECK_OK(rshare_pd_import(dev, payload, 44, &pd));
				CHECK_OK(rshare_pd_unimport(pd));
			}
			CHECK_OK(rshare_device_close(dev));
			CHECK_ST(rshare_attach_finish(op[i], &dev, payload, sizeof(payload), &len),
				 RSHARE_E_STALE);
			op[i] = NULL;
			done++;
		}
	}
	CHECK(done == OPS - cancelled);
	CHECK(count_fds() == fds_published - (OPS - cancelled));
	CHECK(waiting_count() == 0);
	cli_output("shares --waiting --json", out, sizeof(out));
	CHECK(strcmp(out, "[]\n") == 0);
	cli_output("shares --json", out, sizeof(out));
	CHECK(strstr(out, "\"attaches\":50") != NULL);
	CHECK_OK(rshare_broker_withdraw(sh));
	pub_free(&p);
	CHECK(count_fds() == fds_before);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* rshare_attach_wait(): a signal ends the wait only with RSHARE_WAIT_SIGNAL. */
static void case_wait_signal(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { 0, 100000 } };
	rshare_attach *op;
	uint64_t t0;

	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	REQUIRE_OK(rshare_broker_attach_start(path, "never/published", &op));

	t0 = ms_now();
	REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
	CHECK_ST(rshare_attach_wait(op, 5000, RSHARE_WAIT_SIGNAL), RSHARE_E_AGAIN);
	CHECK(rshare_last_errno() == EINTR);
	CHECK(ms_now() - t0 < 2000);

	/* Without the flag the signal is waited through, to the timeout. */
	t0 = ms_now();
	REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
	CHECK_ST(rshare_attach_wait(op, 400, 0), RSHARE_E_AGAIN);
	CHECK(rshare_last_errno() == ETIMEDOUT);
	CHECK(ms_now() - t0 >= 400);

	CHECK_ST(rshare_attach_wait(op, 0, 2), RSHARE_E_INVAL);
	CHECK_MSG("unknown wait flags");
	CHECK(waiting_count() == 1);
	CHECK_OK(rshare_attach_cancel(op));
	CHECK(waiting_count() == 0);
	CHECK_ST(rshare_attach_wait(op, 0, 0), RSHARE_E_STALE);
}

/* A cancel from another thread while a thread waits without a time limit
 * on the op: the cancel returns at once (it never blocks) and wakes the
 * waiter, whose next finish tells it the op is over. */
struct waiter {
	rshare_attach *op;
	int status;
	uint64_t woke;
};

static void *wait_forever(void *arg)
{
	struct waiter *w = arg;

	w->status = rshare_attach_wait(w->op, -1, 0);
	w->woke = ms_now();
	return NULL;
}

static void case_wait_cancel(void)
{
	struct waiter w = { NULL, INT32_MIN, 0 };
	rshare_device *dev;
	unsigned char payload[64];
	size_t len;
	pthread_t th;
	uint64_t t0;
	int before = count_fds();

	REQUIRE_OK(rshare_broker_attach_start(path, "never/published", &w.op));
	REQUIRE(pthread_create(&th, NULL, wait_forever, &w) == 0);
	usleep(100000); /* the waiter is in its poll */
	t0 = ms_now();
	alarm(10); /* a cancel that waits for the waiter would wait for ever */
	CHECK_OK(rshare_attach_cancel(w.op));
	CHECK(ms_now() - t0 < 1000);
	pthread_join(th, NULL);
	alarm(0);
	CHECK(w.woke - t0 < 1000);
	CHECK(w.status == RSHARE_OK || w.status == RSHARE_E_STALE);
	CHECK_ST(rshare_attach_finish(w.op, &dev, payload, sizeof(payload), &len),
		 RSHARE_E_STALE);
	CHECK(waiting_count() == 0);
	CHECK(count_fds() == before);
}

static void case_bad_arguments(void)
{
	rshare_attach *op;
	rshare_device *dev;
	size_t len;
	int fd;

	CHECK_ST(rshare_broker_attach_start(path, NAME, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_broker_attach_start(path, NULL, &op), RSHARE_E_INVAL);
	CHECK_ST(rshare_broker_attach_start(path, "bad//name", &op), RSHARE_E_INVAL);
	CHECK_ST(rshare_attach_fd(NULL, &fd), RSHARE_E_INVAL);
	CHECK_ST(rshare_attach_finish(NULL, &dev, NULL, 0, &len), RSHARE_E_INVAL);
	CHECK_ST(rshare_attach_cancel(NULL), RSHARE_E_INVAL);
	REQUIRE_OK(rshare_broker_attach_start(path, NAME, &op));
	CHECK_ST(rshare_attach_fd(op, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_attach_finish(op, NULL, NULL, 0, &len), RSHARE_E_INVAL);
	CHECK_ST(rshare_attach_finish(op, &dev, NULL, 0, NULL), RSHARE_E_INVAL);
	CHECK_OK(rshare_attach_cancel(op));
	/* No broker there: the start fails and holds nothing. */
	{
		int before = count_fds();
		char nowhere[128];

		snprintf(nowhere, sizeof(nowhere), "%s/none.sock", dir);
		CHECK_ST(rshare_broker_attach_start(nowhere, NAME, &op), RSHARE_E_IO);
		CHECK(rshare_last_errno() == ENOENT || rshare_last_errno() == ECONNREFUSED);
		CHECK(count_fds() == before);
	}
}

/* ---- a share that carries a buffer (startv / finishv) ---- */

#define BUF_NAME "loop/buf"
#define BUF_BYTES "written by the publisher"

/* What the publisher tells the test once its share is up. */
struct buf_pub {
	ino_t ino;   /* its buffer's memfd */
	size_t plen; /* the payload's first blob (the PD's) */
	size_t len;  /* the whole payload: the PD's blob, then the buffer's */
};

/* A publisher process: a buffer holding BUF_BYTES published under
 * BUF_NAME with its memfd; it withdraws once *done is closed and exits 0
 * if the attacher's write (its pid, at offset 64) reached its pages. */
static pid_t buf_publisher(struct buf_pub *out, int *done)
{
	int up[2], down[2];
	pid_t pid;

	REQUIRE(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		unsigned char payload[2 * RSHARE_BLOB_MAX];
		rshare_device *dev;
		rshare_share *sh;
		rshare_pd *pd;
		rshare_buf *buf;
		struct buf_pub me;
		struct stat st;
		size_t blen;
		int fd, peer = 0;
		char *ptr, c;

		close(up[0]);
		close(down[1]);
		if (rshare_device_open("sim0", &dev) || rshare_pd_alloc(dev, &pd) ||
		    rshare_buf_alloc(pd, 4096, RSHARE_ACCESS_LOCAL_WRITE, &buf) ||
		    rshare_buf_ptr(buf, (void **)&ptr, NULL) || rshare_buf_fd(buf, &fd) ||
		    fstat(fd, &st))
			_exit(2);
		memcpy(ptr, BUF_BYTES, sizeof(BUF_BYTES));
		me.ino = st.st_ino;
		me.plen = export_pd(pd, payload);
		if (rshare_buf_export(buf, payload + me.plen, sizeof(payload) - me.plen, &blen))
			_exit(3);
		me.len = me.plen + blen;
		if (rshare_broker_publishv(path, BUF_NAME, dev, &fd, 1, payload, me.len, NULL, &sh) ||
		    write(up[1], &me, sizeof(me)) != sizeof(me))
			_exit(4);
		if (read(down[0], &c, 1) != 0) /* the test closes its end when done */
			_exit(5);
		memcpy(&peer, ptr + 64, sizeof(peer));
		if (rshare_broker_withdraw(sh) || rshare_buf_free(buf) || rshare_pd_free(pd) ||
		    rshare_device_close(dev))
			_exit(6);
		_exit(peer == (int)getppid() ? 0 : 7);
	}
	close(up[1]);
	close(down[0]);
	REQUIRE(read(up[0], out, sizeof(*out)) == sizeof(*out));
	close(up[0]);
	*done = down[1];
	return pid;
}

/* Import the attached PD and buffer, check the publisher's bytes and
 * write this process's pid where the publisher looks for it. */
static void use_buffer(rshare_device *dev, const unsigned char *payload,
		       const struct buf_pub *bp, int fd)
{
	rshare_pd *pd;
	rshare_buf *buf;
	char *ptr;
	int me = (int)getpid();

	REQUIRE_OK(rshare_pd_import(dev, payload, bp->plen, &pd));
	REQUIRE_OK(rshare_buf_import(pd, payload + bp->plen, bp->len - bp->plen, fd, &buf));
	REQUIRE_OK(rshare_buf_ptr(buf, (void **)&ptr, NULL));
	CHECK(memcmp(ptr, BUF_BYTES, sizeof(BUF_BYTES)) == 0);
	memcpy(ptr + 64, &me, sizeof(me));
	CHECK_OK(rshare_buf_unimport(buf));
	CHECK_OK(rshare_pd_unimport(pd));
}

static void case_buffer_share(void)
{
	unsigned char payload[2 * RSHARE_BLOB_MAX], small[8];
	int fds[4] = { -1, -1, -1, -1 }, before = count_fds(), mid, done, st, fd;
	rshare_attach *op, *plain, *gone;
	rshare_device *dev;
	struct buf_pub bp;
	struct stat sb;
	size_t len, n;
	pid_t pub;

	/* Both wait before the share exists; the publisher is another process. */
	REQUIRE_OK(rshare_broker_attach_startv(path, BUF_NAME, &op));
	REQUIRE_OK(rshare_broker_attach_start(path, BUF_NAME, &plain));
	pub = buf_publisher(&bp, &done);
	REQUIRE_OK(rshare_attach_wait(op, 5000, 0));

	/* finish (no v) is told to use finishv, and the op keeps the share. */
	CHECK_ST(rshare_attach_finish(op, &dev, payload, sizeof(payload), &len),
		 RSHARE_E_PROTOCOL);
	CHECK_MSG("rshare_attach_finishv");
	CHECK_OK(rshare_attach_fd(op, &fd));
	/* No room for the fd, or for the payload: both sizes told, share kept. */
	n = len = 0;
	CHECK_ST(rshare_attach_finishv(op, &dev, NULL, 0, &n, payload, sizeof(payload), &len),
		 RSHARE_E_NOSPACE);
	CHECK(n == 1 && len == bp.len);
	CHECK_MSG("room for 0 fds");
	n = len = 0;
	CHECK_ST(rshare_attach_finishv(op, &dev, fds, 4, &n, small, sizeof(small), &len),
		 RSHARE_E_NOSPACE);
	CHECK(n == 1 && len == bp.len && fds[0] == -1);
	CHECK_MSG("too small");
	CHECK_ST(rshare_attach_finishv(op, &dev, fds, 4, NULL, payload, sizeof(payload), &len),
		 RSHARE_E_INVAL);
	/* Room for both: the device, the payload and the buffer's memfd. */
	CHECK_OK(rshare_attach_finishv(op, &dev, fds, 4, &n, payload, sizeof(payload), &len));
	CHECK(n == 1 && len == bp.len && fds[1] == -1);
	REQUIRE(fstat(fds[0], &sb) == 0);
	CHECK(sb.st_ino == bp.ino);
	CHECK(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
	use_buffer(dev, payload, &bp, fds[0]);
	close(fds[0]);
	CHECK_OK(rshare_device_close(dev));
	CHECK_ST(rshare_attach_finishv(op, &dev, fds, 4, &n, payload, sizeof(payload), &len),
		 RSHARE_E_STALE);

	/* An op started without v is refused the share by the broker: over. */
	REQUIRE_OK(rshare_attach_wait(plain, 5000, 0));
	CHECK_ST(rshare_attach_finishv(plain, &dev, fds, 4, &n, payload, sizeof(payload), &len),
		 RSHARE_E_PROTOCOL);
	CHECK_MSG("rshare_broker_attach_startv");
	CHECK_ST(rshare_attach_cancel(plain), RSHARE_E_STALE);

	/* Cancelled after the share arrived: read into the op (a short fds_cap)
	 * or still queued on its socket; either way no fd stays behind. */
	mid = count_fds();
	REQUIRE_OK(rshare_broker_attach_startv(path, BUF_NAME, &op));
	REQUIRE_OK(rshare_broker_attach_startv(path, BUF_NAME, &gone));
	REQUIRE_OK(rshare_attach_wait(op, 5000, 0));
	REQUIRE_OK(rshare_attach_wait(gone, 5000, 0));
	CHECK_ST(rshare_attach_finishv(op, &dev, fds, 0, &n, payload, sizeof(payload), &len),
		 RSHARE_E_NOSPACE);
	CHECK(count_fds() >= mid + 2 + 2); /* the sockets, the device and memfd held */
	CHECK_OK(rshare_attach_cancel(op));
	CHECK_OK(rshare_attach_cancel(gone));
	CHECK(count_fds() == mid);

	close(done);
	REQUIRE(waitpid(pub, &st, 0) == pub);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* it saw this process's write */
	CHECK(count_fds() == before);
}

/* finishv in one thread while another cancels the op that holds a
 * received share (its memfd among them): each call answers NOSPACE,
 * STALE or (the cancel) OK, never anything else, and no fd stays. */
struct finisher {
	rshare_attach *op;
	int bad; /* statuses other than NOSPACE and STALE */
};

static void *finish_until_stale(void *arg)
{
	struct finisher *f = arg;
	unsigned char payload[2 * RSHARE_BLOB_MAX];
	rshare_device *dev;
	size_t n, len;
	int st;

	do {
		st = rshare_attach_finishv(f->op, &dev, NULL, 0, &n, payload, sizeof(payload), &len);
		f->bad += st != RSHARE_E_NOSPACE && st != RSHARE_E_STALE;
	} while (st == RSHARE_E_NOSPACE);
	return NULL;
}

static void case_buffer_cancel_race(void)
{
	int before = count_fds(), done, st;
	struct buf_pub bp;
	pid_t pub = buf_publisher(&bp, &done);
	int mid = count_fds();

	for (int i = 0; i < 20; i++) {
		struct finisher f = { NULL, 0 };
		pthread_t th;

		REQUIRE_OK(rshare_broker_attach_startv(path, BUF_NAME, &f.op));
		REQUIRE_OK(rshare_attach_wait(f.op, 5000, 0));
		REQUIRE(pthread_create(&th, NULL, finish_until_stale, &f) == 0);
		if (i % 2)
			usleep(100); /* sometimes after the reply was read, sometimes before */
		CHECK_OK(rshare_attach_cancel(f.op));
		pthread_join(th, NULL);
		CHECK(f.bad == 0);
		CHECK(count_fds() == mid);
	}
	/* The publisher waits for this process's write: give it one. */
	{
		unsigned char payload[2 * RSHARE_BLOB_MAX];
		rshare_attach *op;
		rshare_device *dev;
		size_t n, len;
		int fd;

		REQUIRE_OK(rshare_broker_attach_startv(path, BUF_NAME, &op));
		REQUIRE_OK(rshare_attach_wait(op, 5000, 0));
		REQUIRE_OK(rshare_attach_finishv(op, &dev, &fd, 1, &n, payload, sizeof(payload),
						 &len));
		use_buffer(dev, payload, &bp, fd);
		close(fd);
		CHECK_OK(rshare_device_close(dev));
	}
	close(done);
	REQUIRE(waitpid(pub, &st, 0) == pub);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(count_fds() == before);
}

/* ---- a hostile broker's replies to an operation ---- */

/* A hostile broker at hpath answering one attach with an OK reply of a
 * len-byte body carrying nfds fresh memfds (the device's, then extras). */
struct liar {
	int lfd;
	uint32_t len;
	int nfds;
	bool pipe_extra; /* the fds after the first: a pipe's end, no memfd */
};

static void *liar_broker(void *arg)
{
	struct liar *l = arg;
	unsigned char req[512], *m = calloc(1, 16 + (size_t)l->len);
	int fds[8], s = accept(l->lfd, NULL, NULL);

	if (s < 0 || !m) {
		free(m);
		return NULL;
	}
	(void)!recv(s, req, sizeof(req), 0);
	for (int i = 0; i < l->nfds; i++) {
		int p[2];

		if (i && l->pipe_extra && pipe(p) == 0) {
			fds[i] = p[0];
			close(p[1]);
		} else { /* sealed as a buffer's memory is */
			fds[i] = memfd_create("liar", MFD_CLOEXEC | MFD_ALLOW_SEALING);
			(void)!fcntl(fds[i], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		}
	}
	raw_header(m, RAW_ATTACH | RAW_REPLY, 0, l->len);
	send_fds(s, m, 16 + l->len, fds, l->nfds);
	for (int i = 0; i < l->nfds; i++)
		close(fds[i]); /* in flight: the client's are the last references */
	free(m);
	close(s);
	return NULL;
}

/* One event-loop attach answered by the liar on hpath: finishv's status
 * (with room for cap bytes of payload; its message names msg unless NULL),
 * the op then over (cancel: STALE) and no device made. */
static int finish_from_liar(struct liar *l, const char *hpath, void *payload, size_t cap,
			    const char *msg)
{
	int fds[RSHARE_CHANNEL_FDS_MAX], st;
	rshare_device *dev = NULL;
	rshare_attach *op;
	size_t n = 0, len = 0;
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, liar_broker, l) == 0);
	REQUIRE_OK(rshare_broker_attach_startv(hpath, "x", &op));
	REQUIRE_OK(rshare_attach_wait(op, 5000, 0));
	pthread_join(t, NULL);
	st = rshare_attach_finishv(op, &dev, fds, RSHARE_CHANNEL_FDS_MAX, &n, payload, cap, &len);
	if (msg)
		CHECK_MSG(msg);
	CHECK_ST(rshare_attach_cancel(op), RSHARE_E_STALE);
	CHECK(dev == NULL);
	return st;
}

/* A share one byte past RSHARE_PAYLOAD_MAX is no share: PROTOCOL, the op
 * over and every fd it carried closed; not NOSPACE asking for a buffer
 * past the limit (which the bindings' full-size finish cannot give, and so
 * would drop the op, fds and all). The blocking attach refuses it too,
 * whatever the caller's room. */
static void case_hostile_reply(void)
{
	static unsigned char payload[RSHARE_PAYLOAD_MAX + 64];
	struct liar l = { -1, RSHARE_PAYLOAD_MAX + 1, 2, false };
	char hpath[128];
	rshare_device *dev = NULL;
	int fds[RSHARE_CHANNEL_FDS_MAX], before = count_fds();
	size_t n = 0, len = 0;
	pthread_t t;

	snprintf(hpath, sizeof(hpath), "%s/liar.sock", dir);
	l.lfd = raw_listen(hpath);
	CHECK_ST(finish_from_liar(&l, hpath, payload, RSHARE_PAYLOAD_MAX, NULL), RSHARE_E_PROTOCOL);
	CHECK(count_fds() == before + 1); /* the listener */

	REQUIRE(pthread_create(&t, NULL, liar_broker, &l) == 0);
	CHECK_ST(rshare_broker_attachv(hpath, "x", 0, &dev, fds, RSHARE_CHANNEL_FDS_MAX, &n,
				       payload, sizeof(payload), &len), RSHARE_E_PROTOCOL);
	pthread_join(t, NULL);
	CHECK(dev == NULL);
	close(l.lfd);
	unlink(hpath);
	CHECK(count_fds() == before);
}

/* A reply whose extra fd is no sealed memfd (here a pipe; a FUSE file
 * whose close blocks would do worse) is a broker that lies: PROTOCOL
 * naming it, before the caller or the op holds any of its fds, whether or
 * not the caller would import the buffer. */
static void case_extra_fd_not_memfd(void)
{
	unsigned char payload[64];
	struct liar l = { -1, 0, 2, true };
	char hpath[128];
	rshare_device *dev = NULL;
	int fds[RSHARE_CHANNEL_FDS_MAX], before = count_fds();
	size_t n = 0, len = 0;
	pthread_t t;

	snprintf(hpath, sizeof(hpath), "%s/liar.sock", dir);
	l.lfd = raw_listen(hpath);
	REQUIRE(pthread_create(&t, NULL, liar_broker, &l) == 0);
	CHECK_ST(rshare_broker_attachv(hpath, "x", 0, &dev, fds, RSHARE_CHANNEL_FDS_MAX, &n,
				       payload, sizeof(payload), &len), RSHARE_E_PROTOCOL);
	CHECK_MSG("extra fd 0 is no sealed memfd");
	pthread_join(t, NULL);
	CHECK(dev == NULL);

	CHECK_ST(finish_from_liar(&l, hpath, payload, sizeof(payload), "no sealed memfd"),
		 RSHARE_E_PROTOCOL);

	/* Memfds all, but the first is no device: NODEV, and the extra one
	 * is closed with it. */
	l.pipe_extra = false;
	CHECK_ST(finish_from_liar(&l, hpath, payload, sizeof(payload), NULL), RSHARE_E_NODEV);
	close(l.lfd);
	unlink(hpath);
	CHECK(settled_fds() == before);
}

/* The broker stops while an operation waits: finish reports it, once. */
static pid_t broker; /* the broker process of the case, 0 once reaped */

static void case_broker_gone(void)
{
	rshare_attach *op;
	rshare_device *dev;
	unsigned char payload[64];
	size_t len;
	int fd, st, before = count_fds();

	REQUIRE_OK(rshare_broker_attach_start(path, "gone/soon", &op));
	REQUIRE_OK(rshare_attach_fd(op, &fd));
	REQUIRE(kill(broker, SIGTERM) == 0);
	REQUIRE_OK(rshare_attach_wait(op, 5000, 0));
	CHECK_ST(rshare_attach_finish(op, &dev, payload, sizeof(payload), &len), RSHARE_E_IO);
	CHECK_ST(rshare_attach_cancel(op), RSHARE_E_STALE);
	CHECK(count_fds() == before);
	REQUIRE(waitpid(broker, &st, 0) == broker);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	broker = 0;
}

/* ---- the channel on non-blocking sockets ---- */

struct sender {
	int sock;
	rshare_device *dev;
	unsigned char *payload;
	int status; /* checked by the main thread after the join */
};

static void *send_big(void *arg)
{
	struct sender *s = arg;

	s->status = rshare_channel_send(s->sock, s->dev, s->payload, RSHARE_PAYLOAD_MAX);
	return NULL;
}

static void case_channel_nonblocking(void)
{
	static unsigned char big[RSHARE_PAYLOAD_MAX], got[RSHARE_PAYLOAD_MAX];
	int sv[2], rcv = 4096, st, before;
	rshare_device *dev, *in;
	struct sender s;
	pthread_t th;
	size_t len;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	for (int type = 0; type < 2; type++) {
		REQUIRE(socketpair(AF_UNIX, type ? SOCK_SEQPACKET : SOCK_STREAM, 0, sv) == 0);
		REQUIRE(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
		before = count_fds();
		CHECK_ST(rshare_channel_recv(sv[1], &in, got, sizeof(got), &len), RSHARE_E_AGAIN);
		CHECK(rshare_last_errno() == EAGAIN);
		CHECK(count_fds() == before);
		if (type == 0) {
			/* A small receive buffer: the 64 KiB message arrives in pieces. */
			REQUIRE(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) == 0);
			REQUIRE(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &rcv, sizeof(rcv)) == 0);
		}
		s = (struct sender){ sv[0], dev, big, -1 };
		REQUIRE(pthread_create(&th, NULL, send_big, &s) == 0);
		for (;;) {
			struct pollfd pf = { sv[1], POLLIN, 0 };

			REQUIRE(poll(&pf, 1, 5000) == 1);
			st = rshare_channel_recv(sv[1], &in, got, sizeof(got), &len);
			if (st != RSHARE_E_AGAIN)
				break;
		}
		CHECK_OK(st);
		CHECK(len == sizeof(big) && memcmp(got, big, len) == 0);
		if (st == RSHARE_OK)
			CHECK_OK(rshare_device_close(in));
		pthread_join(th, NULL);
		CHECK_OK(s.status);
		close(sv[0]);
		close(sv[1]);
	}
	CHECK_OK(rshare_device_close(dev));
}

/* Every case: a broker in a process of its own (broker_gone stops it). */
static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	make_endpoint(dir, sizeof(dir), path, sizeof(path));
	broker = broker_child();
}

static void teardown(void)
{
	int st;

	if (broker) {
		REQUIRE(kill(broker, SIGTERM) == 0);
		REQUIRE(waitpid(broker, &st, 0) == broker);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		broker = 0;
	}
	rmdir(dir);
}

#define T_PROGRAM_test_attach_loop ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
