/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Attach by name through a broker against the raw sendmsg(SCM_RIGHTS) round
 * trip that hands over the same device fd and payload, measured in
 * alternation in the same run, against the same peer process.
 *
 * The peer is this program exec'd (`rshare-bench __broker-peer EP DEVICE`,
 * socket on fd 3): it opens the device, allocates a PD and a VAR, starts a
 * broker (a thread of the peer) on EP and publishes them there. Raw: a
 * one-byte request on fd 3, the peer's main thread answers with the device
 * fd and the two blobs. Attach: rshare_broker_attach() by name (connect,
 * request, the broker's lookup and policy check, the reply with the fd, the
 * device import) and rshare_device_close(). The broker adds one hop: the
 * connection it accepts per attach.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define ROUNDS 400
#define WARMUP 20
#define PEER_FD 3
#define NAME "bench/attach"

int bench_broker_peer(int argc, char **argv)
{
	uint8_t payload[2 * RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	rshare_broker *b;
	rshare_share *share;
	size_t n, len = 0;
	int fd;
	char c;

	if (argc != 3 || rshare_device_open(argv[2], &dev) || rshare_pd_alloc(dev, &pd) ||
	    rshare_var_alloc(dev, 0, &var) ||
	    rshare_pd_export(pd, payload, RSHARE_BLOB_MAX, &n))
		return 1;
	len = n;
	if (rshare_var_export(var, payload + len, RSHARE_BLOB_MAX, &n))
		return 1;
	len += n;
	if (rshare_broker_start(argv[1], &b) ||
	    rshare_broker_publish(argv[1], NAME, dev, payload, len, NULL, &share)) {
		fprintf(stderr, "rshare-bench peer: %s\n", rshare_last_error());
		return 1;
	}
	rshare_device_fd(dev, &fd);
	if (send(PEER_FD, "r", 1, MSG_NOSIGNAL) != 1)
		return 1;
	while (recv(PEER_FD, &c, 1, 0) == 1)
		if (bench_send_fd(PEER_FD, fd, payload, len))
			break;
	rshare_broker_withdraw(share);
	rshare_broker_stop(b);
	rshare_var_free(var);
	rshare_pd_free(pd);
	rshare_device_close(dev);
	return 0;
}

/* One raw round trip: ask, receive the fd and payload, close the fd. */
static uint64_t raw_round_trip(int sock, uint8_t *buf, size_t cap)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	uint64_t t0 = bench_now_ns();
	struct cmsghdr *cm;
	int fd;

	if (send(sock, "q", 1, MSG_NOSIGNAL) != 1 || recvmsg(sock, &m, MSG_CMSG_CLOEXEC) <= 0 ||
	    !(cm = CMSG_FIRSTHDR(&m)))
		return 0;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(fd);
	return bench_now_ns() - t0;
}

static uint64_t attach_round_trip(const char *ep, uint8_t *buf, size_t cap)
{
	uint64_t t0 = bench_now_ns();
	rshare_device *dev;
	size_t len;

	if (rshare_broker_attach(ep, NAME, 0, &dev, buf, cap, &len) ||
	    rshare_device_close(dev))
		return 0;
	return bench_now_ns() - t0;
}

int bench_broker(const struct bench_env *env, const void *arg, struct bench_result *r)
{
	static uint8_t buf[RSHARE_PAYLOAD_MAX];
	char dir[] = "/tmp/rshare-bench-XXXXXX", ep[64], devname[RSHARE_NAME_MAX], ready;
	struct series raw = series_new(ROUNDS + WARMUP), mine = series_new(ROUNDS + WARMUP);
	int sv[2] = { -1, -1 }, s = -1;
	uint64_t a = 0, b = 0;
	size_t n;
	pid_t pid = -1;

	(void)arg;
	if (!mkdtemp(dir) || rshare_device_name(env->dev, devname, sizeof(devname), &n) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		goto out;
	snprintf(ep, sizeof(ep), "%s/b.sock", dir);
	pid = fork();
	if (pid == 0) {
		if (dup2(sv[1], PEER_FD) < 0 || fcntl(PEER_FD, F_SETFD, 0) < 0)
			_exit(127);
		execl(env->self, "rshare-bench", "__broker-peer", ep, devname, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	sv[1] = -1;
	if (pid < 0 || recv(sv[0], &ready, 1, 0) != 1)
		goto out;
	/* Alternate, so that both see the same CPU wake-up conditions. */
	for (int i = 0; i < ROUNDS / env->scale + WARMUP; i++) {
		a = raw_round_trip(sv[0], buf, sizeof(buf));
		b = attach_round_trip(ep, buf, sizeof(buf));
		if (!a || !b)
			break;
		if (i >= WARMUP) {
			series_add(&raw, 0, a, 1);
			series_add(&mine, 0, b, 1);
		}
	}
	if (a && b) {
		r->med = series_pct(&mine, 0.5) / 1000;
		r->p99 = series_pct(&mine, 0.99) / 1000;
		r->floor_med = series_pct(&raw, 0.5) / 1000;
		r->floor_p99 = series_pct(&raw, 0.99) / 1000;
		s = 0;
	}
out:
	if (s)
		fprintf(stderr, "rshare-bench: attach by name failed: %s\n", rshare_last_error());
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	{
		char lock[80];
		snprintf(lock, sizeof(lock), "%s.lock", ep);
		unlink(lock);
		rmdir(dir);
	}
	series_free(&raw);
	series_free(&mine);
	return s;
}
