/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The channel: one message = a 16-byte header, the payload, and the device
 * fd as SCM_RIGHTS ancillary data on the first byte, followed (since 1.2)
 * by its ledger's fd when the context has a ledger (ledger.h). A 1.1
 * receiver refuses a message with two fds cleanly: RSHARE_E_PROTOCOL
 * ("exactly 1 expected"), the message and both fds dropped, nothing
 * adopted; contexts without a ledger (sim0, hardware from a bare fd) still
 * send one fd, which every version reads.
 *
 * Header (little-endian): magic "RSHC", u16 version (1), u16 flags (0),
 * u32 payload length, u32 reserved (0).
 *
 * The receiver peeks at the header first, with room for the fds: a peek
 * leaves the message queued but installs copies of its fds, so the
 * receiver then holds the device fd before it consumes anything. The
 * message is consumed only once it is known to be good and to fit: a
 * too-small buffer (NOSPACE) or a process out of fds (IO with EMFILE: the
 * kernel could not install the fd) leaves it queued for a retry. The read
 * that consumes it passes no control buffer, so the kernel drops the fds
 * it carries instead of installing them a second time.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "internal.h"
#include "util/error.h"
#include "util/fdutil.h"
#include "util/le.h"

#define CH_MAGIC "RSHC"
#define CH_VERSION 1
#define CH_HDR 16
#define CH_MAX_FDS 8 /* room to see (and close) a peer's extra fds */
#define PIECE_MS 5000 /* a stream message's next piece, on a non-blocking socket */

static void make_header(uint8_t *h, uint32_t len)
{
	memcpy(h, CH_MAGIC, 4);
	rs_put16(h + 4, CH_VERSION);
	rs_put16(h + 6, 0);
	rs_put32(h + 8, len);
	rs_put32(h + 12, 0);
}

static int send_rest(int sock, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = send(sock, p, n, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rs_fail(RSHARE_E_IO, errno, "send on socket %d failed", sock);
		p += r;
		n -= (size_t)r;
	}
	return RSHARE_OK;
}

int rshare_channel_send(int sock, const rshare_device *dev, const void *payload,
			size_t len)
{
	union rs_dev_fds_cmsg ctl;
	uint8_t hdr[CH_HDR];
	struct iovec iov[2] = { { hdr, CH_HDR }, { (void *)payload, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	struct rs_slot *slot;
	size_t sent;
	ssize_t r;
	int status, fds[2];

	if (sock < 0)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "socket %d is negative", sock));
	if (len > RSHARE_PAYLOAD_MAX)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "payload of %zu bytes exceeds %d",
				  len, RSHARE_PAYLOAD_MAX));
	if (!payload && len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "payload is NULL but len is %zu", len));
	/* Pinned for the whole send: the fd cannot be closed under us. */
	status = rs_pin(dev, RS_OBJ_DEVICE, &slot);
	if (status)
		RS_RETURN(status);
	make_header(hdr, (uint32_t)len);
	rs_cmsg_attach_fds(&msg, &ctl, fds, rs_ctx_fds(&slot->u.dev->ctx, fds));
	do
		r = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		status = rs_fail(errno == ENOTSOCK || errno == EBADF ? RSHARE_E_INVAL
								     : RSHARE_E_IO,
				 errno, "sendmsg on socket %d failed", sock);
	} else {
		/* A stream socket may take the message in pieces; the fd went
		 * with the first one. */
		sent = (size_t)r;
		if (sent < CH_HDR)
			status = send_rest(sock, hdr + sent, CH_HDR - sent);
		if (!status && sent < CH_HDR + len) {
			size_t done = sent > CH_HDR ? sent - CH_HDR : 0;
			/* len > 0 here: payload is not NULL. */
			status = send_rest(sock, (const uint8_t *)payload + done, len - done);
		}
	}
	rs_unpin(slot);
	RS_RETURN(status);
}

static int recv_fail(int status, int err, int sock, const char *what)
{
	return rs_fail(status, err, "%s on socket %d", what, sock);
}

static int io_status(int err)
{
	return err == ENOTSOCK || err == EBADF ? RSHARE_E_INVAL : RSHARE_E_IO;
}

/* Check a received header; RSHARE_OK with the payload length. */
static int parse_header(const uint8_t *h, int sock, uint32_t *len)
{
	if (memcmp(h, CH_MAGIC, 4) != 0 || rs_get16(h + 4) != CH_VERSION ||
	    rs_get16(h + 6) != 0)
		return recv_fail(RSHARE_E_PROTOCOL, 0, sock,
				 "not an rshare channel message (bad magic or version)");
	*len = rs_get32(h + 8);
	if (*len > RSHARE_PAYLOAD_MAX)
		return rs_fail(RSHARE_E_PROTOCOL, 0,
			       "message announces a %u-byte payload, limit is %d", *len,
			       RSHARE_PAYLOAD_MAX);
	return RSHARE_OK;
}

/* The peer's fds: closed off this thread (closer.c), as a peer can send
 * one whose close blocks. */
static void close_fds(const int *fds, int n)
{
	rs_close_untrusted_all(fds, n);
}

/* The message at the head of the queue, left there: its header (r bytes
 * of it read) and copies of its fds. *ctrunc: the kernel could not
 * deliver all of its fds. */
struct peeked {
	uint8_t hdr[CH_HDR];
	size_t got;
	int fds[CH_MAX_FDS], nfds;
	bool ctrunc;
};

static int peek_message(int sock, struct peeked *p)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(CH_MAX_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = { p->hdr, CH_HDR };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t r;

	do
		r = recvmsg(sock, &msg, MSG_PEEK | MSG_WAITALL | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return recv_fail(RSHARE_E_AGAIN, errno, sock, "no message queued (non-blocking)");
	if (r < 0)
		return recv_fail(io_status(errno), errno, sock, "recvmsg failed");
	if (r == 0)
		return recv_fail(RSHARE_E_IO, 0, sock, "peer closed the channel");
	p->got = (size_t)r;
	p->nfds = rs_cmsg_take_fds(&msg, p->fds, CH_MAX_FDS);
	p->ctrunc = (msg.msg_flags & MSG_CTRUNC) != 0;
	return RSHARE_OK;
}

/* On a non-blocking stream the header itself may still be arriving: then
 * nothing is consumed (RSHARE_E_AGAIN). Once the header is there, the
 * sender is in the middle of the message, and recv_exact() waits for the
 * rest (a 64 KiB message may not even fit the socket buffer). */
static int header_arriving(int sock)
{
	int fl = fcntl(sock, F_GETFL);

	if (fl < 0 || !(fl & O_NONBLOCK))
		return RSHARE_OK; /* blocking: the peek saw the end of the stream */
	return recv_fail(RSHARE_E_AGAIN, EAGAIN, sock,
			 "message header still arriving (non-blocking; nothing consumed)");
}

/* Is the process out of file descriptors? Then the errno that says so. */
static int out_of_fds(int sock)
{
	int probe = fcntl(sock, F_DUPFD_CLOEXEC, 0);

	if (probe >= 0) {
		rs_close_quietly(probe);
		return 0;
	}
	return errno == EMFILE || errno == ENFILE ? errno : 0;
}

/* Take an rshare message with the wrong fds off the queue so the next
 * receive can proceed: the record on a seqpacket socket, its header and
 * announced payload (plen) on a stream. Its fds are received (room for the
 * most a message can carry) and closed off this thread: fds the kernel
 * dropped for want of room would be released on ours. */
static void discard(int sock, uint32_t plen)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(RS_SCM_MAX_FD * sizeof(int))];
	} ctl;
	uint8_t scratch[512];
	size_t n = CH_HDR + (size_t)plen;
	int type = SOCK_STREAM, fds[RS_SCM_MAX_FD];
	socklen_t tlen = sizeof(type);

	getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &tlen);
	do {
		struct iovec iov = { scratch, n < sizeof(scratch) ? n : sizeof(scratch) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				      .msg_controllen = sizeof(ctl.buf) };
		ssize_t r = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (r >= 0)
			close_fds(fds, rs_cmsg_take_fds(&msg, fds, RS_SCM_MAX_FD));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || type != SOCK_STREAM)
			return;
		n -= (size_t)r;
	} while (n);
}

/* Read exactly n more bytes into p (the tail of a stream message). On a
 * non-blocking socket, wait up to PIECE_MS for each piece. */
static int recv_exact(int sock, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = recv(sock, p, n, MSG_WAITALL);
		struct pollfd pf = { .fd = sock, .events = POLLIN };

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    (poll(&pf, 1, PIECE_MS) > 0 || errno == EINTR))
			continue;
		if (r <= 0)
			return recv_fail(RSHARE_E_IO, r < 0 ? errno : 0, sock,
					 "message cut short");
		p += r;
		n -= (size_t)r;
	}
	return RSHARE_OK;
}

/* Consume the peeked message: its header again and plen payload bytes into
 * payload (which holds them), without a control buffer. */
static int consume(int sock, const uint8_t *peeked_hdr, void *payload, uint32_t plen)
{
	uint8_t hdr[CH_HDR];
	struct iovec iov[2] = { { hdr, CH_HDR }, { payload, plen } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = plen ? 2 : 1 };
	size_t got;
	ssize_t r;
	int status = RSHARE_OK;

	do
		r = recvmsg(sock, &msg, MSG_WAITALL);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return recv_fail(RSHARE_E_IO, r < 0 ? errno : 0, sock, "message cut short");
	got = (size_t)r;
	/* A stream may deliver the message in pieces. */
	if (got < CH_HDR)
		status = recv_exact(sock, hdr + got, CH_HDR - got);
	if (!status && got < CH_HDR + (size_t)plen) {
		size_t done = got > CH_HDR ? got - CH_HDR : 0;
		/* plen > 0 here: payload is not NULL. */
		status = recv_exact(sock, (uint8_t *)payload + done, plen - done);
	}
	if (status)
		return status;
	if (memcmp(hdr, peeked_hdr, CH_HDR) != 0)
		return recv_fail(RSHARE_E_PROTOCOL, 0, sock,
				 "message changed between peek and read (another reader?)");
	if (msg.msg_flags & MSG_TRUNC)
		return rs_fail(RSHARE_E_PROTOCOL, 0,
			       "message is longer than the %u bytes its header announces",
			       plen);
	return RSHARE_OK;
}

int rshare_channel_recv(int sock, rshare_device **dev, void *payload, size_t cap,
			size_t *len)
{
	struct peeked p;
	uint32_t plen = 0;
	int status, err;

	if (sock < 0 || !dev || !len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "%s",
				  sock < 0 ? "socket is negative"
					   : !dev ? "dev is NULL" : "len is NULL"));
	status = peek_message(sock, &p);
	if (status)
		RS_RETURN(status); /* nothing consumed */
	/* What is not an rshare message is not ours to consume: it stays
	 * queued (on a stream there is no telling where it would end). */
	if (p.got < CH_HDR && memcmp(p.hdr, CH_MAGIC, p.got < 4 ? p.got : 4) == 0)
		status = header_arriving(sock);
	if (!status)
		status = p.got < CH_HDR ? recv_fail(RSHARE_E_PROTOCOL, 0, sock,
						    "short message (no complete rshare header)")
					: parse_header(p.hdr, sock, &plen);
	if (status) {
		close_fds(p.fds, p.nfds);
		RS_RETURN(status);
	}
	if (p.ctrunc && (err = out_of_fds(sock))) {
		/* The kernel could not install the device fd here: the
		 * message stays queued for a retry once fds are free. */
		close_fds(p.fds, p.nfds);
		RS_RETURN(rs_fail(RSHARE_E_IO, err,
				  "no free fd for the device the message carries "
				  "(the message stays queued)"));
	}
	if (p.ctrunc || p.nfds < 1 || p.nfds > 2) {
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "message carried %d fd(s)%s, 1 or 2 (device, ledger) expected",
				 p.nfds, p.ctrunc ? " or more" : "");
		goto drop;
	}
	if (plen && (!payload || cap < plen)) {
		close_fds(p.fds, p.nfds);
		*len = plen;
		RS_RETURN(rs_fail(RSHARE_E_NOSPACE, 0,
				  "payload buffer of %zu bytes too small, %u needed "
				  "(the message stays queued)",
				  payload ? cap : 0, plen));
	}
	status = consume(sock, p.hdr, payload, plen);
	if (status) {
		close_fds(p.fds, p.nfds);
		RS_RETURN(status);
	}
	/* takes both fds */
	status = rs_device_adopt_received(p.fds[0], p.nfds == 2 ? p.fds[1] : -1, (void **)dev);
	if (status)
		RS_RETURN(status);
	*len = plen;
	return RSHARE_OK;

drop:
	close_fds(p.fds, p.nfds);
	discard(sock, plen);
	RS_RETURN(status);
}
