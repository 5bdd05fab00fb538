/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The channel: fd + payload over stream and seqpacket sockets, the NOSPACE
 * retry that loses nothing, and hostile messages (no fd, wrong fd, two fds,
 * garbage, a closed peer) refused without leaking an fd; an empty payload
 * passed as NULL; a receiver out of fds (EMFILE) that loses nothing; extra
 * fds (rshare_channel_sendv/recvv, since 1.2).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Send a hand-made message: header fields (extra: the extra fds it
 * announces), no payload, and the given fds. */
static void send_raw_x(int sock, const char *magic, uint32_t plen, uint32_t extra,
		       const int *fds, int nfds)
{
	unsigned char hdr[16] = { 0 };
	char ctl[CMSG_SPACE(4 * sizeof(int))] __attribute__((aligned(8)));
	struct iovec iov = { hdr, sizeof(hdr) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(hdr, magic, 4);
	hdr[4] = 1;
	hdr[8] = (unsigned char)plen;
	hdr[9] = (unsigned char)(plen >> 8);
	hdr[12] = (unsigned char)extra;
	if (nfds) {
		struct cmsghdr *cm;
		memset(ctl, 0, sizeof(ctl));
		msg.msg_control = ctl;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	CHECK(sendmsg(sock, &msg, 0) == (ssize_t)sizeof(hdr));
}

static void send_raw(int sock, const char *magic, uint32_t plen, const int *fds, int nfds)
{
	send_raw_x(sock, magic, plen, 0, fds, nfds);
}

/* Is fd the same open file as want? */
static int same_file(int fd, int want)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstat(want, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* Since 1.2: extra fds, all or nothing; a short fds_cap consumes nothing;
 * rshare_channel_recv (the 1.1 receiver's rule) refuses and drops them;
 * a message whose fds disagree with its header is dropped. */
static void extra_fds(int type, rshare_device *dev, const unsigned char *blob, size_t blen)
{
	unsigned char buf[RSHARE_BLOB_MAX];
	int sv[2], p[2], many[RSHARE_CHANNEL_FDS_MAX + 1], got_fds[RSHARE_CHANNEL_FDS_MAX];
	int raw[4], fd, before;
	rshare_device *got;
	size_t len = 0, n = 99;

	REQUIRE(socketpair(AF_UNIX, type, 0, sv) == 0 && pipe(p) == 0);
	before = count_fds();
	CHECK_OK(rshare_channel_sendv(sv[0], dev, p, 2, blob, blen));
	/* Too few fd slots (or none): NOSPACE, the counts set, nothing taken. */
	CHECK_ST(rshare_channel_recvv(sv[1], &got, got_fds, 1, &n, buf, sizeof(buf), &len),
		 RSHARE_E_NOSPACE);
	CHECK(n == 2 && len == blen);
	n = 0;
	CHECK_ST(rshare_channel_recvv(sv[1], &got, NULL, 0, &n, buf, sizeof(buf), &len),
		 RSHARE_E_NOSPACE);
	CHECK(n == 2);
	CHECK_ST(rshare_channel_recvv(sv[1], &got, got_fds, 2, &n, buf, blen - 1, &len),
		 RSHARE_E_NOSPACE);
	CHECK(count_fds() == before);
	CHECK_OK(rshare_channel_recvv(sv[1], &got, got_fds, 2, &n, buf, sizeof(buf), &len));
	CHECK(n == 2 && len == blen && memcmp(buf, blob, blen) == 0);
	CHECK(same_file(got_fds[0], p[0]) && same_file(got_fds[1], p[1]));
	CHECK((fcntl(got_fds[0], F_GETFD) & FD_CLOEXEC) != 0);
	close(got_fds[0]);
	close(got_fds[1]);
	CHECK_OK(rshare_device_close(got));

	/* A plain send through recvv: no extra fds. */
	CHECK_OK(rshare_channel_send(sv[0], dev, blob, blen));
	CHECK_OK(rshare_channel_recvv(sv[1], &got, NULL, 0, &n, buf, sizeof(buf), &len));
	CHECK(n == 0 && len == blen);
	CHECK_OK(rshare_device_close(got));

	/* rshare_channel_recv refuses extra fds and drops the message, as a
	 * 1.1 library does; the next message is received whole. */
	CHECK_OK(rshare_channel_sendv(sv[0], dev, p, 1, blob, blen));
	CHECK_OK(rshare_channel_send(sv[0], dev, blob, blen));
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len), RSHARE_E_PROTOCOL);
	CHECK_MSG("rshare_channel_recvv");
	CHECK_OK(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len));
	CHECK(len == blen);
	CHECK_OK(rshare_device_close(got));

	/* Header and fds disagree: refused, dropped, every fd closed. */
	CHECK_OK(rshare_device_fd(dev, &fd));
	raw[0] = fd;
	raw[1] = p[0];
	raw[2] = p[1];
	raw[3] = p[0];
	/* announces 1 extra, so 3 for the device, which has 1 or 2 */
	send_raw_x(sv[0], "RSHC", 0, 1, raw, 4);
	CHECK_ST(rshare_channel_recvv(sv[1], &got, got_fds, 4, &n, buf, sizeof(buf), &len),
		 RSHARE_E_PROTOCOL);
	send_raw_x(sv[0], "RSHC", 0, 3, raw, 3); /* announces 3 extra, carries 3 in all */
	CHECK_ST(rshare_channel_recvv(sv[1], &got, got_fds, 4, &n, buf, sizeof(buf), &len),
		 RSHARE_E_PROTOCOL);
	send_raw_x(sv[0], "RSHC", 0, 200, raw, 1); /* announces more than the limit */
	CHECK_ST(rshare_channel_recvv(sv[1], &got, got_fds, 4, &n, buf, sizeof(buf), &len),
		 RSHARE_E_PROTOCOL);
	CHECK(count_fds() == before);

	/* Sender's limits. */
	for (int i = 0; i <= RSHARE_CHANNEL_FDS_MAX; i++)
		many[i] = p[0];
	CHECK_ST(rshare_channel_sendv(sv[0], dev, many, RSHARE_CHANNEL_FDS_MAX + 1, blob, blen),
		 RSHARE_E_INVAL);
	CHECK_ST(rshare_channel_sendv(sv[0], dev, NULL, 1, blob, blen), RSHARE_E_INVAL);
	many[1] = -1;
	CHECK_ST(rshare_channel_sendv(sv[0], dev, many, 2, blob, blen), RSHARE_E_INVAL);
	CHECK_ST(rshare_channel_recvv(sv[1], &got, got_fds, 1, NULL, buf, sizeof(buf), &len),
		 RSHARE_E_INVAL);
	/* The most fds a message may carry. */
	CHECK_OK(rshare_channel_sendv(sv[0], dev, many + 2, RSHARE_CHANNEL_FDS_MAX - 2, NULL, 0));
	CHECK_OK(rshare_channel_recvv(sv[1], &got, got_fds, RSHARE_CHANNEL_FDS_MAX, &n, NULL, 0,
				      &len));
	CHECK(n == RSHARE_CHANNEL_FDS_MAX - 2 && len == 0);
	for (size_t i = 0; i < n; i++)
		close(got_fds[i]);
	CHECK_OK(rshare_device_close(got));
	many[1] = p[0];
	CHECK_OK(rshare_channel_sendv(sv[0], dev, many, RSHARE_CHANNEL_FDS_MAX, NULL, 0));
	CHECK_OK(rshare_channel_recvv(sv[1], &got, got_fds, RSHARE_CHANNEL_FDS_MAX, &n, NULL, 0,
				      &len));
	CHECK(n == RSHARE_CHANNEL_FDS_MAX);
	for (size_t i = 0; i < n; i++)
		close(got_fds[i]);
	CHECK_OK(rshare_device_close(got));
	CHECK(count_fds() == before);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static void round_trip(int type, rshare_device *dev, const unsigned char *blob, size_t blen)
{
	static unsigned char big[RSHARE_PAYLOAD_MAX];
	unsigned char buf[RSHARE_PAYLOAD_MAX];
	rshare_device *got, *got2;
	rshare_pd *pd;
	size_t len = 0;
	int sv[2], fds_before;

	REQUIRE_OK(socketpair(AF_UNIX, type, 0, sv) == 0 ? 0 : RSHARE_E_IO);
	fds_before = count_fds();

	/* Blob payload; the received device shares the sender's table. */
	CHECK_OK(rshare_channel_send(sv[0], dev, blob, blen));
	CHECK_OK(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len));
	CHECK(len == blen && memcmp(buf, blob, blen) == 0);
	CHECK_OK(rshare_pd_import(got, buf, len, &pd));
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_device_close(got));

	/* Too small a buffer: NOSPACE with the size, nothing consumed; the
	 * retry gets the same message and a working fd. */
	CHECK_OK(rshare_channel_send(sv[0], dev, blob, blen));
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, blen - 1, &len), RSHARE_E_NOSPACE);
	CHECK(len == blen);
	CHECK_ST(rshare_channel_recv(sv[1], &got, NULL, 0, &len), RSHARE_E_NOSPACE);
	CHECK(len == blen);
	CHECK(count_fds() == fds_before); /* the peeks installed no fd */
	CHECK_OK(rshare_channel_recv(sv[1], &got, buf, blen, &len));
	CHECK(len == blen && memcmp(buf, blob, blen) == 0);
	CHECK_OK(rshare_pd_import(got, buf, len, &pd));
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_device_close(got));

	/* Empty payload, and the largest one (sent from another process so a
	 * stream socket's buffer cannot block us). */
	CHECK_OK(rshare_channel_send(sv[0], dev, NULL, 0));
	CHECK_OK(rshare_channel_recv(sv[1], &got, NULL, 0, &len));
	CHECK(len == 0);
	CHECK_OK(rshare_device_close(got));
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	if (fork() == 0)
		_exit(rshare_channel_send(sv[0], dev, big, sizeof(big)) ? 1 : 0);
	CHECK_OK(rshare_channel_recv(sv[1], &got2, buf, sizeof(buf), &len));
	CHECK(len == sizeof(big) && memcmp(buf, big, len) == 0);
	CHECK_OK(rshare_device_close(got2));
	{
		int ws;
		CHECK(wait(&ws) > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	}
	CHECK_ST(rshare_channel_send(sv[0], dev, big, sizeof(big) + 1), RSHARE_E_INVAL);
	CHECK_ST(rshare_channel_send(sv[0], dev, NULL, 3), RSHARE_E_INVAL);

	/* Hostile messages. */
	{
		int p[2], devnull = open("/dev/null", O_RDONLY), fd;
		int two[2];
		REQUIRE_OK(pipe(p) == 0 ? 0 : RSHARE_E_IO);
		fds_before = count_fds();
		send_raw(sv[0], "RSHC", 0, &p[0], 1); /* not a device */
		CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len),
			 RSHARE_E_NODEV);
		send_raw(sv[0], "RSHC", 0, NULL, 0); /* no fd */
		CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len),
			 RSHARE_E_PROTOCOL);
		CHECK(strstr(rshare_last_error(), "0 fd") != NULL);
		CHECK_OK(rshare_device_fd(dev, &fd));
		two[0] = fd;
		two[1] = devnull;
		/* Two fds: the device and its ledger (since 1.2). A second fd
		 * that is no ledger is closed and the device still adopted. */
		send_raw(sv[0], "RSHC", 0, two, 2);
		CHECK_OK(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len));
		CHECK_OK(rshare_device_close(got));
		{
			int three[3] = { fd, devnull, devnull };

			send_raw(sv[0], "RSHC", 0, three, 3); /* three fds */
			CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len),
				 RSHARE_E_PROTOCOL);
		}
		CHECK(count_fds() == fds_before); /* every received fd was closed */
		close(p[0]);
		close(p[1]);
		close(devnull);
	}
	CHECK_ST(rshare_channel_recv(-1, &got, buf, sizeof(buf), &len), RSHARE_E_INVAL);
	CHECK_ST(rshare_channel_recv(sv[1], NULL, buf, sizeof(buf), &len), RSHARE_E_INVAL);
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_channel_send(-1, dev, NULL, 0), RSHARE_E_INVAL);
	close(sv[0]);
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len), RSHARE_E_IO);
	CHECK(strstr(rshare_last_error(), "closed") != NULL);
	close(sv[1]);
}

/* payload NULL with len 0 on both sides: valid, and no pointer arithmetic
 * on NULL (clang's UBSan in the TSan build checks that). */
static void empty_payload(int type, rshare_device *dev)
{
	rshare_device *got;
	size_t len = 99;
	int sv[2];

	REQUIRE_OK(socketpair(AF_UNIX, type, 0, sv) == 0 ? 0 : RSHARE_E_IO);
	CHECK_OK(rshare_channel_send(sv[0], dev, NULL, 0));
	CHECK_OK(rshare_channel_recv(sv[1], &got, NULL, 0, &len));
	CHECK(len == 0);
	CHECK_OK(rshare_device_close(got));
	/* An empty message into a real buffer, and NULL with a non-zero cap. */
	CHECK_OK(rshare_channel_send(sv[0], dev, NULL, 0));
	len = 99;
	CHECK_OK(rshare_channel_recv(sv[1], &got, NULL, 16, &len));
	CHECK(len == 0);
	CHECK_OK(rshare_device_close(got));
	CHECK_ST(rshare_channel_send(sv[0], dev, NULL, 1), RSHARE_E_INVAL);
	close(sv[0]);
	close(sv[1]);
}

/* A receiver at its fd limit: IO with EMFILE (not the peer's fault), the
 * message stays queued, and a retry once an fd is free gets it whole. */
static void out_of_fds(int type, rshare_device *dev, const unsigned char *blob, size_t blen)
{
	unsigned char buf[RSHARE_BLOB_MAX];
	struct rlimit old, low;
	rshare_device *got = NULL;
	rshare_pd *pd;
	int sv[2], filler[64], nfill = 0, before;
	size_t len = 0;

	struct timeval tmo = { .tv_sec = 5 };

	REQUIRE_OK(socketpair(AF_UNIX, type, 0, sv) == 0 ? 0 : RSHARE_E_IO);
	/* A message lost by a failed try would block the retry: time out. */
	REQUIRE(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) == 0);
	CHECK_OK(rshare_channel_send(sv[0], dev, blob, blen));
	before = count_fds();
	/* Lower the limit just above the fds in use and fill the rest. */
	REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
	low = old;
	low.rlim_cur = (rlim_t)before + 8;
	REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
	while (nfill < 64 && (filler[nfill] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		nfill++;
	CHECK(nfill < 64 && errno == EMFILE);

	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len), RSHARE_E_IO);
	CHECK(rshare_last_errno() == EMFILE);
	CHECK_MSG("stays queued");
	CHECK(got == NULL); /* out-parameter untouched */
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len), RSHARE_E_IO);

	/* One fd free: the same message, its fd and payload, arrives. */
	close(filler[--nfill]);
	CHECK_OK(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len));
	CHECK(len == blen && memcmp(buf, blob, blen) == 0);
	while (nfill)
		close(filler[--nfill]);
	REQUIRE(setrlimit(RLIMIT_NOFILE, &old) == 0);
	if (got) {
		CHECK_OK(rshare_pd_import(got, buf, len, &pd));
		CHECK_OK(rshare_pd_unimport(pd));
		CHECK_OK(rshare_device_close(got));
	}
	CHECK(count_fds() == before); /* nothing leaked by the failed tries */
	close(sv[0]);
	close(sv[1]);
}

/* Every case: sim0, a PD and its blob to carry. */
static rshare_device *dev;
static rshare_pd *pd;
static unsigned char blob[RSHARE_BLOB_MAX];
static size_t blen;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	blen = export_pd(pd, blob);
}

static void teardown(void)
{
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

static void case_round_trip_stream(void)
{
	round_trip(SOCK_STREAM, dev, blob, blen);
}

static void case_round_trip_seqpacket(void)
{
	round_trip(SOCK_SEQPACKET, dev, blob, blen);
}

static void case_empty_payload_stream(void)
{
	empty_payload(SOCK_STREAM, dev);
}

static void case_empty_payload_seqpacket(void)
{
	empty_payload(SOCK_SEQPACKET, dev);
}

static void case_out_of_fds_stream(void)
{
	out_of_fds(SOCK_STREAM, dev, blob, blen);
}

static void case_out_of_fds_seqpacket(void)
{
	out_of_fds(SOCK_SEQPACKET, dev, blob, blen);
}

static void case_extra_fds_stream(void)
{
	extra_fds(SOCK_STREAM, dev, blob, blen);
}

static void case_extra_fds_seqpacket(void)
{
	extra_fds(SOCK_SEQPACKET, dev, blob, blen);
}

/* Garbage on a stream: refused as not ours. A wrong-magic message. */
static void case_not_ours(void)
{
	unsigned char buf[64];
	rshare_device *got;
	size_t len;
	int sv[2], fd;

	REQUIRE_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 ? 0 : RSHARE_E_IO);
	CHECK(write(sv[0], "hello, this is not rshare", 25) == 25);
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len), RSHARE_E_PROTOCOL);
	close(sv[0]);
	close(sv[1]);
	REQUIRE_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0 ? 0 : RSHARE_E_IO);
	CHECK_OK(rshare_device_fd(dev, &fd));
	send_raw(sv[0], "XXXX", 0, &fd, 1);
	CHECK_ST(rshare_channel_recv(sv[1], &got, buf, sizeof(buf), &len), RSHARE_E_PROTOCOL);
	close(sv[0]);
	close(sv[1]);
}

/* Not a socket. */
static void case_not_a_socket(void)
{
	int p[2];

	REQUIRE_OK(pipe(p) == 0 ? 0 : RSHARE_E_IO);
	CHECK_ST(rshare_channel_send(p[1], dev, NULL, 0), RSHARE_E_INVAL);
	close(p[0]);
	close(p[1]);
}

#define T_PROGRAM_test_channel ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
