/*
 * The channel: one message = a 16-byte header, the payload, and the device
 * fd as SCM_RIGHTS ancillary data on the first byte.
 *
 * Header (little-endian): magic "RSHC", u16 version (1), u16 flags (0),
 * u32 payload length, u32 reserved (0).
 *
 * A receiver whose buffer may be too small peeks at the header first,
 * without a control buffer, so the kernel installs no fd: the shortfall is
 * reported before anything is consumed, and a retry finds the same message
 * and fd. A receiver with a RSHARE_PAYLOAD_MAX buffer reads in one call.
 */
#include <errno.h>
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
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	uint8_t hdr[CH_HDR];
	struct iovec iov[2] = { { hdr, CH_HDR }, { (void *)payload, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm;
	struct rs_slot *slot;
	size_t sent;
	ssize_t r;
	int status, fd;

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
	fd = slot->u.dev->ctx.fd;
	make_header(hdr, (uint32_t)len);
	memset(ctl.buf, 0, sizeof(ctl.buf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
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
		if (!status)
			status = send_rest(sock, (const uint8_t *)payload +
						 (sent > CH_HDR ? sent - CH_HDR : 0),
					   len - (sent > CH_HDR ? sent - CH_HDR : 0));
	}
	rs_unpin(slot);
	RS_RETURN(status);
}

static int recv_fail(int status, int err, int sock, const char *what)
{
	return rs_fail(status, err, "%s on socket %d", what, sock);
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

static int io_status(int err)
{
	return err == ENOTSOCK || err == EBADF ? RSHARE_E_INVAL : RSHARE_E_IO;
}

/* Read the message's header without consuming it or installing fds. */
static int peek_header(int sock, uint32_t *len)
{
	uint8_t h[CH_HDR];
	struct iovec iov = { h, CH_HDR };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	do
		r = recvmsg(sock, &msg, MSG_PEEK | MSG_WAITALL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return recv_fail(io_status(errno), errno, sock, "recvmsg failed");
	if (r == 0)
		return recv_fail(RSHARE_E_IO, 0, sock, "peer closed the channel");
	if (r < CH_HDR)
		return recv_fail(RSHARE_E_PROTOCOL, 0, sock,
				 "short message (no complete rshare header)");
	return parse_header(h, sock, len);
}

/* Collect the SCM_RIGHTS fds of msg into fds; returns how many. */
static int take_fds(struct msghdr *msg, int *fds)
{
	int n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t k;
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n < CH_MAX_FDS; i++)
			memcpy(&fds[n++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	return n;
}

/* Read exactly n more bytes into p (the tail of a message). */
static int recv_exact(int sock, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = recv(sock, p, n, MSG_WAITALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return recv_fail(RSHARE_E_IO, r < 0 ? errno : 0, sock,
					 "message cut short");
		p += r;
		n -= (size_t)r;
	}
	return RSHARE_OK;
}

int rshare_channel_recv(int sock, rshare_device **dev, void *payload, size_t cap,
			size_t *len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(CH_MAX_FDS * sizeof(int))];
	} ctl;
	uint8_t hdr[CH_HDR];
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	int fds[CH_MAX_FDS], nfds, status;
	uint32_t plen = 0;
	size_t got, want;
	bool sized;
	ssize_t r;

	if (sock < 0 || !dev || !len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "%s",
				  sock < 0 ? "socket is negative"
					   : !dev ? "dev is NULL" : "len is NULL"));
	/* A buffer that holds any payload needs no sizing: read the message
	 * in one call. Otherwise peek at its size first, so that a too-small
	 * buffer is reported before anything is consumed. */
	sized = !payload || cap < RSHARE_PAYLOAD_MAX;
	if (sized) {
		status = peek_header(sock, &plen);
		if (status)
			RS_RETURN(status);
		if (plen && (!payload || cap < plen)) {
			*len = plen;
			RS_RETURN(rs_fail(RSHARE_E_NOSPACE, 0,
					  "payload buffer of %zu bytes too small, %u needed "
					  "(the message stays queued)",
					  payload ? cap : 0, plen));
		}
	}
	want = sized ? plen : RSHARE_PAYLOAD_MAX;
	iov[0] = (struct iovec){ hdr, CH_HDR };
	iov[1] = (struct iovec){ payload, want };
	msg.msg_iovlen = want ? 2 : 1;
	/* Without a known size, MSG_WAITALL would wait for a full buffer. */
	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (sized ? MSG_WAITALL : 0));
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		RS_RETURN(recv_fail(r < 0 ? io_status(errno) : RSHARE_E_IO, r < 0 ? errno : 0,
				    sock, r < 0 ? "recvmsg failed" : "peer closed the channel"));
	nfds = take_fds(&msg, fds);
	got = (size_t)r;
	/* A stream may hand over the header in pieces; the fds came with the
	 * first one. */
	status = got < CH_HDR ? recv_exact(sock, hdr + got, CH_HDR - got) : RSHARE_OK;
	if (!status)
		status = parse_header(hdr, sock, &plen);
	if (status)
		goto close_fds;
	got = got < CH_HDR ? CH_HDR : got;
	if (got > CH_HDR + plen || (msg.msg_flags & MSG_TRUNC)) {
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "message is longer than the %u bytes its header announces",
				 plen);
		goto close_fds;
	}
	status = recv_exact(sock, (uint8_t *)payload + (got - CH_HDR), CH_HDR + plen - got);
	if (status)
		goto close_fds;
	if ((msg.msg_flags & MSG_CTRUNC) || nfds != 1) {
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "message carried %d fd(s)%s, exactly 1 expected", nfds,
				 (msg.msg_flags & MSG_CTRUNC) ? " or more" : "");
		goto close_fds;
	}
	status = rs_device_adopt(fds[0], (void **)dev); /* takes fds[0] */
	if (status)
		RS_RETURN(status);
	*len = plen;
	return RSHARE_OK;

close_fds:
	for (int i = 0; i < nfds; i++)
		rs_close_quietly(fds[i]);
	RS_RETURN(status);
}
