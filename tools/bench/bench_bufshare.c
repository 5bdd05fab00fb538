/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * "share a 64 MiB buffer to 8 processes" beside "8 private registrations":
 * what a shared buffer is for. Eight forked workers wait on channels.
 *   shared:  the parent allocates one buffer (registered once), touches its
 *            pages (as registration pins them), sends device, PD, buffer
 *            blob and memfd to each worker (rshare_channel_sendv); each
 *            imports the PD and the buffer and answers with its MR's keys.
 *   private: the parent sends each worker the device and the PD; each maps
 *            64 MiB of its own, touches it and registers it on the PD, and
 *            answers likewise.
 * Timed: from the first call to the last answer (the workers are forked
 * before). Pinned: the bytes of the distinct registrations the answers
 * name (their rkeys): what the MRs pin on hardware.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define WORKERS 8
#define BUF_LEN (64u << 20)
#define ROUNDS 5

struct answer {
	uint32_t rkey;
	uint64_t length;
	int ok;
};

/* A worker: one message, one answer, then its objects go with its exit. */
static int worker(int sock, bool shared)
{
	unsigned char msg[2 * RSHARE_BLOB_MAX];
	struct answer a = { 0 };
	rshare_device *dev;
	rshare_pd *pd;
	rshare_mr *mr = NULL;
	rshare_buf *buf = NULL;
	size_t len, nfds = 0, plen;
	int fd = -1;
	void *mem = MAP_FAILED;

	if (rshare_channel_recvv(sock, &dev, &fd, 1, &nfds, msg, sizeof(msg), &len) ||
	    rshare_blob_size(msg, len, &plen) || rshare_pd_import(dev, msg, plen, &pd))
		return 1;
	if (shared) {
		a.ok = nfds == 1 && !rshare_buf_import(pd, msg + plen, len - plen, fd, &buf) &&
		       !rshare_buf_mr(buf, &mr);
	} else {
		mem = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		if (mem != MAP_FAILED) {
			memset(mem, 1, BUF_LEN); /* what pinning does to the pages */
			a.ok = !rshare_mr_reg(pd, mem, BUF_LEN, RSHARE_ACCESS_LOCAL_WRITE, &mr);
		}
	}
	if (a.ok)
		a.ok = !rshare_mr_attrs(mr, NULL, &a.length, NULL, &a.rkey, NULL);
	if (write(sock, &a, sizeof(a)) != (ssize_t)sizeof(a))
		return 1;
	if (buf)
		rshare_buf_unimport(buf);
	else if (mr)
		rshare_mr_dereg(mr);
	return a.ok ? 0 : 1;
}

/* One round: fork the workers, then time the sharing. Returns the
 * microseconds, or -1; *pinned gets the distinct registrations' bytes. */
static double round_once(rshare_device *dev, rshare_pd *pd, bool shared, uint64_t *pinned)
{
	unsigned char msg[2 * RSHARE_BLOB_MAX];
	int socks[WORKERS], fd = -1, failed = 0;
	uint32_t rkeys[WORKERS];
	pid_t pids[WORKERS];
	rshare_buf *buf = NULL;
	size_t plen = 0, blen = 0;
	uint64_t t0, t1;
	void *ptr;
	int nkeys = 0;

	for (int i = 0; i < WORKERS; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -1;
		pids[i] = fork();
		if (pids[i] == 0) {
			close(sv[0]);
			_exit(worker(sv[1], shared));
		}
		close(sv[1]);
		socks[i] = sv[0];
	}
	rshare_pd_export(pd, msg, sizeof(msg), &plen);
	t0 = bench_now_ns();
	if (shared) {
		failed = rshare_buf_alloc(pd, BUF_LEN, RSHARE_ACCESS_LOCAL_WRITE, &buf) ||
			 rshare_buf_ptr(buf, &ptr, NULL) || rshare_buf_fd(buf, &fd) ||
			 rshare_buf_export(buf, msg + plen, sizeof(msg) - plen, &blen);
		if (!failed)
			memset(ptr, 1, BUF_LEN); /* once, for everyone */
	}
	for (int i = 0; i < WORKERS && !failed; i++)
		failed = rshare_channel_sendv(socks[i], dev, &fd, shared ? 1 : 0, msg, plen + blen);
	*pinned = 0;
	for (int i = 0; i < WORKERS; i++) {
		struct answer a = { 0 };
		bool seen = false;

		if (failed || read(socks[i], &a, sizeof(a)) != (ssize_t)sizeof(a) || !a.ok) {
			failed = 1;
			continue;
		}
		for (int k = 0; k < nkeys; k++)
			seen |= rkeys[k] == a.rkey;
		if (!seen) {
			rkeys[nkeys++] = a.rkey;
			*pinned += a.length;
		}
	}
	t1 = bench_now_ns();
	for (int i = 0; i < WORKERS; i++) {
		int st;

		close(socks[i]);
		failed |= waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
			  WEXITSTATUS(st) != 0;
	}
	if (buf)
		rshare_buf_free(buf);
	return failed ? -1 : (double)(t1 - t0) / 1000.0;
}

/* A round's microseconds, as they are (no clock cost to subtract). */
static void record(struct series *s, double us)
{
	if (s->n < s->cap)
		s->v[s->n++] = (uint64_t)us;
}

int bench_buf_share(const struct bench_env *env, const void *arg, struct bench_result *r)
{
	int rounds = ROUNDS / env->scale + 1, s = 0;
	struct series shared = series_new((size_t)rounds), private = series_new((size_t)rounds);
	rshare_pd *pd;

	(void)arg;
	s = rshare_pd_alloc(env->dev, &pd);
	if (s)
		return bench_fail("buffer share: a PD", s, false);
	for (int i = 0; i < rounds && !s; i++) {
		double a = round_once(env->dev, pd, true, &r->pinned);
		double b = round_once(env->dev, pd, false, &r->floor_pinned);

		if (a < 0 || b < 0)
			s = -1;
		else {
			record(&shared, a);
			record(&private, b);
		}
	}
	rshare_pd_free(pd);
	if (!s) {
		r->med = series_pct(&shared, 0.5);
		r->p99 = series_pct(&shared, 0.99);
		r->floor_med = series_pct(&private, 0.5);
		r->floor_p99 = series_pct(&private, 0.99);
	}
	series_free(&shared);
	series_free(&private);
	return s ? bench_fail("buffer share: a round", RSHARE_E_IO, false) : 0;
}
