/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Sharing: a full round trip to another process against a raw
 * sendmsg(SCM_RIGHTS) round trip carrying the same payload.
 *
 * The peer is this program exec'd (`rshare-bench __peer MODE`, socket on
 * fd 3), so it is a fresh process, not a fork holding the parent's state.
 * Each mode is measured in its own blocks with its own peer: the work a
 * mode leaves behind (a device close, deferred unmaps) lands in its own
 * samples, never in the next mode's; the floor's blocks and the mode's
 * alternate (PARTS of each), so load that drifts during the run falls on
 * both. Repeated rows keep one peer for the whole block
 * after an untimed warm-up; first-share rows start a new peer per sample
 * and time only the first message it receives (the peer has loaded the
 * library but never opened a device).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define REPEAT_ROUNDS 400
#define REPEAT_WARMUP 20
#define FRESH_ROUNDS 40
/* Blocks per mode, alternating with the floor's: load that drifts during
 * the run (other jobs on the machine) then falls on both alike. */
#define PARTS 4
#define MAX_BLOBS 1000
#define PEER_FD 3

static int peer_receive(int sock, int mode, uint8_t *buf, size_t cap)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	rshare_device *dev;
	size_t len = 0;

	if (mode == SHARE_RAW) {
		struct iovec iov = { buf, cap };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *cm;
		int fd;

		if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) <= 0)
			return -1;
		cm = CMSG_FIRSTHDR(&m);
		if (cm) {
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
			close(fd);
		}
		return 0;
	}
	if (rshare_channel_recv(sock, &dev, buf, cap, &len))
		return -1;
	for (size_t off = 0, blen; mode == SHARE_IMPORT && off < len; off += blen) {
		rshare_pd *pd;

		if (rshare_blob_size(buf + off, len - off, &blen))
			break;
		if (rshare_pd_import(dev, buf + off, blen, &pd) == RSHARE_OK)
			rshare_pd_unimport(pd);
	}
	rshare_device_close(dev);
	return 0;
}

int bench_share_peer(int argc, char **argv)
{
	static uint8_t buf[RSHARE_PAYLOAD_MAX]; /* full size: no sizing peek */
	int mode = argc > 1 ? atoi(argv[1]) : -1;

	if (mode < SHARE_RAW || mode > SHARE_IMPORT)
		return 2;
	if (send(PEER_FD, "r", 1, MSG_NOSIGNAL) != 1)
		return 1;
	while (peer_receive(PEER_FD, mode, buf, sizeof(buf)) == 0)
		if (send(PEER_FD, "k", 1, MSG_NOSIGNAL) != 1)
			break;
	return 0; /* the parent hung up */
}

struct peer {
	int sock;
	pid_t pid;
};

static int peer_start(const struct bench_env *env, int mode, struct peer *p)
{
	char arg[16], ready;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	snprintf(arg, sizeof(arg), "%d", mode);
	p->pid = fork();
	if (p->pid == 0) {
		/* dup2 clears close-on-exec; fcntl covers sv[1] == PEER_FD. */
		if (dup2(sv[1], PEER_FD) < 0 || fcntl(PEER_FD, F_SETFD, 0) < 0)
			_exit(127);
		execl(env->self, "rshare-bench", "__peer", arg, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	p->sock = sv[0];
	if (p->pid < 0 || recv(p->sock, &ready, 1, 0) != 1) {
		fprintf(stderr, "rshare-bench: the sharing peer (%s) did not start\n", env->self);
		close(p->sock);
		if (p->pid > 0)
			waitpid(p->pid, NULL, 0);
		return -1;
	}
	return 0;
}

static void peer_stop(struct peer *p)
{
	close(p->sock);
	waitpid(p->pid, NULL, 0);
}

int bench_send_fd(int sock, int fd, const uint8_t *payload, size_t len)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)payload, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* One round trip: the message, then the peer's one-byte answer. Returns
 * its duration in ns, 0 on failure. */
static uint64_t round_trip(const struct bench_env *env, int mode, int sock,
			   const uint8_t *payload, size_t len)
{
	uint64_t t0 = bench_now_ns();
	int fd, s;
	char ack;

	if (mode == SHARE_RAW) {
		rshare_device_fd(env->dev, &fd);
		s = bench_send_fd(sock, fd, payload, len);
	} else {
		s = rshare_channel_send(sock, env->dev, payload, len);
	}
	if (s || recv(sock, &ack, 1, 0) != 1)
		return 0;
	return bench_now_ns() - t0;
}

/* One mode's block of samples into ser (in ns). */
static int share_block(const struct bench_env *env, int mode, bool fresh,
		       const uint8_t *payload, size_t len, struct series *ser)
{
	struct peer p;
	uint64_t d = 0;

	if (fresh) {
		int rounds = FRESH_ROUNDS / PARTS / env->scale + 2;

		for (int i = 0; i < rounds; i++) {
			if (peer_start(env, mode, &p))
				return -1;
			d = round_trip(env, mode, p.sock, payload, len);
			peer_stop(&p);
			if (!d)
				return -1;
			if (i >= 1) /* the first start pages the program in */
				series_add(ser, 0, d, 1);
		}
		return 0;
	}
	if (peer_start(env, mode, &p))
		return -1;
	for (int i = 0; i < REPEAT_ROUNDS / PARTS / env->scale + REPEAT_WARMUP; i++) {
		d = round_trip(env, mode, p.sock, payload, len);
		if (!d)
			break;
		if (i >= REPEAT_WARMUP)
			series_add(ser, 0, d, 1);
	}
	peer_stop(&p);
	return d ? 0 : -1;
}

static rshare_pd *pds[MAX_BLOBS];
static unsigned have;

void bench_share_release(void)
{
	while (have)
		rshare_pd_free(pds[--have]);
}

/* The payload of n PD blobs, from PDs made once for the whole run. */
static int make_payload(const struct bench_env *env, unsigned n, uint8_t *payload,
			size_t *len)
{
	size_t blen;
	int s;

	for (; have < n && have < MAX_BLOBS; have++)
		if ((s = rshare_pd_alloc(env->dev, &pds[have])))
			return bench_fail("share set-up", s, false);
	*len = 0;
	for (unsigned i = 0; i < n && i < MAX_BLOBS; i++) {
		if ((s = rshare_pd_export(pds[i], payload + *len, RSHARE_BLOB_MAX, &blen)))
			return bench_fail("share set-up", s, false);
		*len += blen;
	}
	return 0;
}

int bench_share(const struct bench_env *env, const void *arg, struct bench_result *r)
{
	static uint8_t payload[RSHARE_PAYLOAD_MAX];
	const struct share_spec *spec = arg;
	size_t cap = REPEAT_ROUNDS + FRESH_ROUNDS + 8 * PARTS, len = 0;
	struct series raw = series_new(cap), mine = series_new(cap);
	int s = make_payload(env, spec->nblobs, payload, &len);

	/* The floor, then the mode, each in its own block, PARTS times. */
	for (int part = 0; part < PARTS && !s; part++) {
		s = share_block(env, SHARE_RAW, spec->fresh, payload, len, &raw);
		if (!s)
			s = share_block(env, spec->mode, spec->fresh, payload, len, &mine);
	}
	if (s) {
		fprintf(stderr, "rshare-bench: the sharing peer failed\n");
	} else {
		r->med = series_pct(&mine, 0.5) / 1000;
		r->p99 = series_pct(&mine, 0.99) / 1000;
		r->floor_med = series_pct(&raw, 0.5) / 1000;
		r->floor_p99 = series_pct(&raw, 0.99) / 1000;
	}
	series_free(&raw);
	series_free(&mine);
	return s;
}
