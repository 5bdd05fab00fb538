/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The channel: one message = a 16-byte header, the payload, and the device
 * fd (then, since 1.2, its ledger's fd when the context has a ledger,
 * ledger.h, and up to RSHARE_CHANNEL_FDS_MAX extra fds) as one SCM_RIGHTS
 * ancillary message on the first byte. The header's last word counts the
 * extra fds, so the device's are the rest: total - extra, which must be 1
 * (command fd) or 2 (command fd, ledger). A 1.1 receiver refuses a message
 * with more than one fd cleanly: RSHARE_E_PROTOCOL ("exactly 1 expected"),
 * the message and its fds dropped, nothing adopted; contexts without a
 * ledger (sim0, hardware from a bare fd) sending no extra fds still send
 * one fd, which every version reads.
 *
 * Header (little-endian): magic "RSHC", u16 version (1), u16 flags (0),
 * u32 payload length, u32 extra fds (0 before 1.2, which ignores the
 * field: a 1.1 receiver counts the fds, finds more than one and drops the
 * message as malformed, so a message with extra fds fails cleanly there).
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
/* The device's fds (command, ledger), the extra fds, and room to see (and close) one more a
 * peer may have added. */
#define CH_MAX_FDS (2 + RSHARE_CHANNEL_FDS_MAX + 1)
#define PIECE_MS 5000 /* a stream message's next piece, on a non-blocking socket */

static void make_header(uint8_t *h, uint32_t len, uint32_t nfds)
{
	memcpy(h, CH_MAGIC, 4);
	rs_put16(h + 4, CH_VERSION);
	rs_put16(h + 6, 0);
	rs_put32(h + 8, len);
	rs_put32(h + 12, nfds);
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

static int send_message(int sock, const rshare_device *dev, const int *fds, size_t nfds,
			const void *payload, size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE((2 + RSHARE_CHANNEL_FDS_MAX) * sizeof(int))];
	} ctl;
	int all[2 + RSHARE_CHANNEL_FDS_MAX];
	uint8_t hdr[CH_HDR];
	struct iovec iov[2] = { { hdr, CH_HDR }, { (void *)payload, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	struct rs_slot *slot;
	size_t sent;
	ssize_t r;
	int status, ndev;

	if (sock < 0)
		return rs_fail(RSHARE_E_INVAL, 0, "socket %d is negative", sock);
	if (len > RSHARE_PAYLOAD_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "payload of %zu bytes exceeds %d", len,
			       RSHARE_PAYLOAD_MAX);
	if (!payload && len)
		return rs_fail(RSHARE_E_INVAL, 0, "payload is NULL but len is %zu", len);
	if (nfds > RSHARE_CHANNEL_FDS_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "%zu extra fds exceed %d", nfds,
			       RSHARE_CHANNEL_FDS_MAX);
	if (!fds && nfds)
		return rs_fail(RSHARE_E_INVAL, 0, "fds is NULL but nfds is %zu", nfds);
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] < 0)
			return rs_fail(RSHARE_E_INVAL, 0, "fds[%zu] is %d", i, fds[i]);
	/* Pinned for the whole send: the fd cannot be closed under us. */
	status = rs_pin(dev, RS_OBJ_DEVICE, &slot);
	if (status)
		return status;
	ndev = rs_ctx_fds(&slot->u.dev->ctx, all);
	for (size_t i = 0; i < nfds; i++)
		all[ndev + i] = fds[i];
	make_header(hdr, (uint32_t)len, (uint32_t)nfds);
	rs_cmsg_attach_fds(&msg, ctl.buf, sizeof(ctl.buf), all, (size_t)ndev + nfds);
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
	return status;
}

int rshare_channel_send(int sock, const rshare_device *dev, const void *payload,
			size_t len)
{
	RS_RETURN(send_message(sock, dev, NULL, 0, payload, len));
}

int rshare_channel_sendv(int sock, const rshare_device *dev, const int *fds, size_t nfds,
			 const void *payload, size_t len)
{
	RS_RETURN(send_message(sock, dev, fds, nfds, payload, len));
}

static int recv_fail(int status, int err, int sock, const char *what)
{
	return rs_fail(status, err, "%s on socket %d", what, sock);
}

static int io_status(int err)
{
	return err == ENOTSOCK || err == EBADF ? RSHARE_E_INVAL : RSHARE_E_IO;
}

/* Check a received header; RSHARE_OK with the payload length and the
 * number of extra fds it announces. */
static int parse_header(const uint8_t *h, int sock, uint32_t *len, uint32_t *nfds)
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
	*nfds = rs_get32(h + 12);
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

/* Where a receive puts the extra fds: fds (cap entries) for
 * rshare_channel_recvv; NULL for rshare_channel_recv, which takes none. */
struct extra_fds {
	int *fds;
	size_t cap;
	size_t *n;
};

static int receive(int sock, rshare_device **dev, const struct extra_fds *x, void *payload,
		   size_t cap, size_t *len)
{
	struct peeked p;
	uint32_t plen = 0, nx = 0;
	int status, err, ndev;

	if (sock < 0 || !dev || !len || (x && !x->n))
		return rs_fail(RSHARE_E_INVAL, 0, "%s",
			       sock < 0 ? "socket is negative"
			       : !dev	? "dev is NULL"
			       : !len	? "len is NULL"
					: "nfds is NULL");
	status = peek_message(sock, &p);
	if (status)
		return status; /* nothing consumed */
	/* What is not an rshare message is not ours to consume: it stays
	 * queued (on a stream there is no telling where it would end). */
	if (p.got < CH_HDR && memcmp(p.hdr, CH_MAGIC, p.got < 4 ? p.got : 4) == 0)
		status = header_arriving(sock);
	if (!status)
		status = p.got < CH_HDR ? recv_fail(RSHARE_E_PROTOCOL, 0, sock,
						    "short message (no complete rshare header)")
					: parse_header(p.hdr, sock, &plen, &nx);
	if (status) {
		close_fds(p.fds, p.nfds);
		return status;
	}
	if (p.ctrunc && (err = out_of_fds(sock))) {
		/* The kernel could not install the fds here: the message
		 * stays queued for a retry once fds are free. */
		close_fds(p.fds, p.nfds);
		return rs_fail(RSHARE_E_IO, err,
			       "no free fd for the fds the message carries "
			       "(the message stays queued)");
	}
	/* The header counts the extra fds; the device's are the rest: its
	 * command fd and, when it has one, its ledger's. */
	if (nx > RSHARE_CHANNEL_FDS_MAX || p.ctrunc || (uint32_t)p.nfds < 1 + nx ||
	    (uint32_t)p.nfds > 2 + nx) {
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "message carried %d fd(s)%s, its header announces 1 or 2 "
				 "(device, ledger) + %u", p.nfds, p.ctrunc ? " or more" : "", nx);
		goto drop;
	}
	if (nx && !x) {
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "message carries %u extra fd(s) besides the device's: "
				 "receive it with rshare_channel_recvv", nx);
		goto drop;
	}
	if ((plen && (!payload || cap < plen)) || (nx && (!x->fds || x->cap < nx))) {
		close_fds(p.fds, p.nfds);
		*len = plen;
		if (x)
			*x->n = nx;
		return rs_fail(RSHARE_E_NOSPACE, 0,
			       "room for %zu payload bytes and %zu fds, the message has %u "
			       "and %u (it stays queued)", payload ? cap : 0,
			       x && x->fds ? x->cap : 0, plen, nx);
	}
	status = consume(sock, p.hdr, payload, plen);
	if (status) {
		close_fds(p.fds, p.nfds);
		return status;
	}
	ndev = p.nfds - (int)nx;
	/* takes the device's fds (and closes them on failure) */
	status = rs_device_adopt_received(p.fds[0], ndev == 2 ? p.fds[1] : -1, (void **)dev);
	if (status) {
		close_fds(p.fds + ndev, (int)nx);
		return status;
	}
	for (uint32_t i = 0; i < nx; i++)
		x->fds[i] = p.fds[ndev + (int)i];
	if (x)
		*x->n = nx;
	*len = plen;
	return RSHARE_OK;

drop:
	close_fds(p.fds, p.nfds);
	discard(sock, plen);
	return status;
}

int rshare_channel_recv(int sock, rshare_device **dev, void *payload, size_t cap,
			size_t *len)
{
	RS_RETURN(receive(sock, dev, NULL, payload, cap, len));
}

int rshare_channel_recvv(int sock, rshare_device **dev, int *fds, size_t fds_cap,
			 size_t *nfds, void *payload, size_t cap, size_t *len)
{
	struct extra_fds x = { fds, fds_cap, nfds };

	RS_RETURN(receive(sock, dev, &x, payload, cap, len));
}
