/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The client side of the broker: one short connection per call, except a
 * publish, whose connection is the share's lifetime (the broker withdraws a
 * non-persistent share when it closes). Replies are parsed as untrusted:
 * exact lengths, known types, at most the fds expected (others closed off
 * this thread, as are the connections: closer.c), and only a character
 * device or a sealed memfd taken for a device.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "blob.h"
#include "util/copyout.h"
#include "broker.h"
#include "internal.h"
#include "proto.h"
#include "rshare/rshare.h"
#include "util/error.h"
#include "util/fdutil.h"
#include "util/memfd.h"
#include "util/le.h"

#define REPLY_MS 10000           /* a broker that takes longer is not answering */
/* The connect of rshare_broker_attach_start(v), made on an event loop's
 * thread: one attempt, which a broker whose queue of connections is full
 * fails at once. */
#define START_CONNECT_MS 0
#define RX_MAX (RSB_HDR + RSHARE_PAYLOAD_MAX + 1)
#define LIST_MAX (64u << 20)     /* a list reply longer than this is refused */
#define MAX_FDS (2 + RSHARE_CHANNEL_FDS_MAX) /* a publish's: the device's 2, the extra fds */

struct share_conn {
	int fd;
	char name[RSHARE_SHARE_NAME_MAX + 1];
};

/* A reply: header, body (in rx), and the fd it carried or -1. */
struct reply {
	struct rsb_header h;
	uint8_t *body;
	int fd;
	int ledger_fd; /* an attach reply's second fd (the device's ledger), or -1 */
	int extra[RSHARE_CHANNEL_FDS_MAX]; /* an attach reply's extra fds (1.2) */
	int nextra;
};

/* Send a request with nfds fds attached (0, or a device's 1 or 2 then, for
 * a publish, its extra fds). */
static int send_request(int sock, const uint8_t *msg, size_t len, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)msg, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (nfds)
		rs_cmsg_attach_fds(&m, ctl.buf, sizeof(ctl.buf), fds, nfds);
	do
		r = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot send to the broker");
	return RSHARE_OK;
}

/* Wait up to timeout_ms (negative: forever) for sock to be readable: 1
 * when it is, 0 when the time passed, -1 with errno on failure (EINTR, a
 * signal, only with intr; else signals are waited through). */
static int poll_readable(int sock, int64_t timeout_ms, bool intr)
{
	int64_t deadline = timeout_ms < 0 ? -1 : (int64_t)rsb_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		int64_t left = deadline < 0 ? -1 : deadline - (int64_t)rsb_now_ms();
		int r;

		if (deadline >= 0 && left < 0)
			left = 0;
		r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r > 0)
			return 1;
		if (r == 0 && deadline >= 0 && (int64_t)rsb_now_ms() >= deadline)
			return 0;
		if (r < 0 && (errno != EINTR || intr))
			return -1;
	}
}

/* Wait up to timeout_ms (negative: forever) for the broker's answer. */
static int wait_readable(int sock, int64_t timeout_ms)
{
	int r = poll_readable(sock, timeout_ms, false);

	if (r > 0)
		return RSHARE_OK;
	if (r == 0)
		return rs_fail(RSHARE_E_IO, ETIMEDOUT, "the broker did not answer");
	return rs_fail(RSHARE_E_IO, errno, "poll on the broker socket failed");
}

/* Receive one reply to a request of type want into rx (RX_MAX bytes). */
static int recv_reply(int sock, uint8_t want, int64_t timeout_ms, uint8_t *rx,
		      struct reply *rep)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(RS_SCM_MAX_FD * sizeof(int))];
	} ctl;
	struct iovec iov = { rx, RX_MAX };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	int fds[RS_SCM_MAX_FD], nfds, ndev, status;
	ssize_t r;

	rep->fd = rep->ledger_fd = -1;
	rep->nextra = 0;
	status = wait_readable(sock, timeout_ms);
	if (status)
		return status;
	do
		r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return rs_fail(RSHARE_E_IO, errno,
			       "the broker closed the connection (it stopped or died)");
	nfds = rs_cmsg_take_fds(&m, fds, RS_SCM_MAX_FD);
	if (r == 0) /* end of stream, or an empty record (with fds, closed below) */
		status = rs_fail(RSHARE_E_IO, ECONNRESET,
				 "the broker closed the connection (it stopped or died)");
	else if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker reply too long");
	else
		status = rsb_parse_header(rx, (size_t)r, &rep->h);
	/* Type 0 | REPLY: the broker refuses or ends the connection itself
	 * (idle, over its limits); its status and message say why. */
	if (!status && rep->h.type != (want | RSB_REPLY) &&
	    !(rep->h.type == RSB_REPLY && rep->h.status < 0))
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker reply of type 0x%x to a request "
				 "of type %u", rep->h.type, want);
	if (!status && (rep->h.status > 0 || rep->h.status < -255))
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker reply with status %d",
				 rep->h.status);
	/* An attach reply: the device's fds (its command fd and, with
	 * RSB_FLAG_LEDGER, its ledger's), then the share's extra fds (1.2). */
	ndev = rep->h.flags & RSB_FLAG_LEDGER ? 2 : 1;
	if (!status && nfds > (rep->h.status == RSHARE_OK && want == RSB_ATTACH
				       ? ndev + RSHARE_CHANNEL_FDS_MAX : 0))
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker reply carried %d fds", nfds);
	if (!status && rep->h.status == RSHARE_OK && want == RSB_ATTACH && nfds < ndev)
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker attach reply with %d fd(s), "
				 "the device's %d expected first", nfds, ndev);
	/* rx holds one byte more than a share can have, so this is seen, not
	 * truncated: refused here, it can be neither "kept for a larger
	 * buffer" (an operation's NOSPACE) nor handed to a larger one. */
	if (!status && rep->h.status == RSHARE_OK && want == RSB_ATTACH &&
	    rep->h.len > RSHARE_PAYLOAD_MAX)
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker attach reply with a %u-byte "
				 "payload, past RSHARE_PAYLOAD_MAX", rep->h.len);
	/* The extra fds are buffers' memory, as the broker keeps only sealed
	 * memfds: anything else (a FUSE file whose close would block, a
	 * socket) is a broker that lies, refused before the caller holds it. */
	for (int i = ndev; !status && rep->h.status == RSHARE_OK && i < nfds; i++)
		if (rs_memfd_sealed(fds[i], NULL))
			status = rs_fail_context(RSHARE_E_PROTOCOL, "broker attach reply's extra "
						 "fd %d is no sealed memfd: ", i - ndev);
	if (status) {
		rs_close_untrusted_all(fds, nfds); /* a broker's fds may block a close */
		return status;
	}
	rep->body = rx + RSB_HDR;
	rep->fd = nfds ? fds[0] : -1;
	rep->ledger_fd = ndev == 2 && nfds >= 2 ? fds[1] : -1;
	for (int i = ndev; i < nfds; i++) /* none in a failure reply (checked above) */
		rep->extra[rep->nextra++] = fds[i];
	return RSHARE_OK;
}

/* Send a request and receive its reply. A broker that refused the
 * connection as it accepted it (type 0 | REPLY: over a limit) has closed
 * it already, so the send fails: its reply, if there, says why. */
static int after_send(int sock, int sent, uint8_t want, int64_t timeout_ms, uint8_t *rx,
		      struct reply *rep)
{
	if (!sent)
		return recv_reply(sock, want, timeout_ms, rx, rep);
	if ((rs_last_errno() == EPIPE || rs_last_errno() == ECONNRESET) &&
	    recv_reply(sock, want, 0, rx, rep) == RSHARE_OK && rep->h.type == RSB_REPLY)
		return RSHARE_OK;
	return rs_fail(RSHARE_E_IO, EPIPE, "cannot send to the broker");
}

static int request(int sock, const uint8_t *msg, size_t len, uint8_t want,
		   int64_t timeout_ms, uint8_t *rx, struct reply *rep)
{
	return after_send(sock, send_request(sock, msg, len, NULL, 0), want, timeout_ms, rx, rep);
}

/* May a broker answer a request of type want with status st? What it
 * sends (server.c, docs/broker.md): anything else reaching the caller
 * would be a status the call does not document. NOSPACE is an attach's
 * only, with its length, and handled there. */
static bool documented(uint8_t want, int32_t st)
{
	switch (st) {
	case RSHARE_E_INVAL:
	case RSHARE_E_BUSY:
	case RSHARE_E_NOMEM:
	case RSHARE_E_PROTOCOL:
		return true;
	case RSHARE_E_NODEV:
	case RSHARE_E_FD_MISMATCH: /* an extra fd that is no sealed memfd (1.2) */
		return want == RSB_PUBLISH;
	case RSHARE_E_NOT_FOUND:
	case RSHARE_E_PERM:
		return want == RSB_ATTACH || want == RSB_WITHDRAW;
	default:
		return false;
	}
}

/* A failure reply to a request of type want: its status, with the
 * broker's message; PROTOCOL for a status the broker never sends. */
static int reply_failure(const struct reply *rep, uint8_t want)
{
	size_t n = rep->h.len < RSB_TEXT_MAX ? rep->h.len : RSB_TEXT_MAX;
	char text[RSB_TEXT_MAX + 1];

	if (!documented(want, rep->h.status))
		return rs_fail(RSHARE_E_PROTOCOL, 0, "broker reply with status %d (%s), which it "
			       "never sends to this request", rep->h.status,
			       rshare_status_name(rep->h.status));

	for (size_t i = 0; i < n; i++) /* print only plain text */
		text[i] = rep->body[i] >= 32 && rep->body[i] < 127 ? (char)rep->body[i] : '?';
	text[n] = '\0';
	return rs_fail(rep->h.status, 0, "broker: %s", n ? text : "(no reason given)");
}

/* Connect, send one request, receive its reply. */
static int transact(const char *endpoint, const uint8_t *req, size_t len, uint8_t want,
		    int64_t timeout_ms, uint8_t *rx, struct reply *rep, int *sock)
{
	int s, status = rsb_connect(endpoint, REPLY_MS, &s);

	if (status)
		return status;
	status = request(s, req, len, want, timeout_ms, rx, rep);
	if (status || !sock)
		rs_close_socket_untrusted(s);
	else
		*sock = s;
	return status;
}

/* ---- the kept connection ---------------------------------------------------
 * Attach is the call programs repeat (the bindings wait in slices of it),
 * so its connection is kept for the next one: no socket, connect, accept
 * and credential lookup per attach, the broker's one hop is the request.
 * One per process. It is never reused by another process, under other
 * credentials (the broker judged those when it accepted the connection),
 * for another endpoint, or once the broker closed it or wrote to it unasked
 * (its idle timeout). A forked child closes its copy at once, in the fork
 * itself: a pre-fork worker that drops to another uid without exec must not
 * find, among its fds, a connection the broker takes for its parent's
 * (issue 18, item 8); a process that changes its uids or gids drops it at
 * its next attach. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;
static struct {
	int fd;
	pid_t pid;
	uid_t uid, euid;
	gid_t gid, egid;
	char path[RSB_PATH_MAX];
} kept = { .fd = -1 };

static void kept_prepare(void) { pthread_mutex_lock(&kept_lock); }
static void kept_release(void) { pthread_mutex_unlock(&kept_lock); }
static void kept_child(void)
{
	if (kept.fd >= 0)
		close(kept.fd); /* our copy only: the parent's connection lives on */
	kept.fd = -1;
	pthread_mutex_unlock(&kept_lock);
}
static void kept_init(void) { pthread_atfork(kept_prepare, kept_release, kept_child); }

/* Is the kept connection this process's, under the credentials it was
 * made with? */
static bool kept_mine(void)
{
	return kept.pid == getpid() && kept.uid == getuid() && kept.euid == geteuid() &&
	       kept.gid == getgid() && kept.egid == getegid();
}

/* The kept connection to path, if usable (it is then no longer kept), or -1. */
static int kept_take(const char *path)
{
	int fd = -1, drop = -1;

	pthread_once(&kept_once, kept_init);
	pthread_mutex_lock(&kept_lock);
	if (kept.fd >= 0) {
		struct pollfd p = { .fd = kept.fd, .events = POLLIN };

		if (kept_mine() && strcmp(kept.path, path) == 0 && poll(&p, 1, 0) == 0)
			fd = kept.fd;
		else
			drop = kept.fd;
		kept.fd = -1;
	}
	pthread_mutex_unlock(&kept_lock);
	rs_close_socket_untrusted(drop); /* no lock held: closer.c takes its own */
	return fd;
}

/* Keep fd (a connection to path that just completed a request). */
static void kept_put(int fd, const char *path)
{
	pthread_once(&kept_once, kept_init);
	pthread_mutex_lock(&kept_lock);
	if (kept.fd < 0) {
		kept.fd = fd;
		kept.pid = getpid();
		kept.uid = getuid();
		kept.euid = geteuid();
		kept.gid = getgid();
		kept.egid = getegid();
		memcpy(kept.path, path, strlen(path) + 1);
		fd = -1;
	}
	pthread_mutex_unlock(&kept_lock);
	if (fd >= 0)
		rs_close_socket_untrusted(fd);
}

void rsb_client_forget(const char *path)
{
	int drop = -1;

	pthread_mutex_lock(&kept_lock);
	if (kept.fd >= 0 && kept.pid == getpid() && strcmp(kept.path, path) == 0) {
		drop = kept.fd;
		kept.fd = -1;
	}
	pthread_mutex_unlock(&kept_lock);
	rs_close_socket_untrusted(drop);
}

/* One request and its reply on the kept connection to endpoint, or a new
 * one (also when the kept one turns out closed by the broker). */
static int transact_kept(const char *endpoint, const uint8_t *req, size_t len, uint8_t want,
			 int64_t timeout_ms, uint8_t *rx, struct reply *rep)
{
	char path[RSB_PATH_MAX];
	int status = rsb_resolve(endpoint, path);

	for (int attempt = 0; !status && attempt < 2; attempt++) {
		int s = kept_take(path);
		bool reused = s >= 0;

		if (!reused && (status = rsb_connect(path, REPLY_MS, &s)) != RSHARE_OK)
			break;
		status = request(s, req, len, want, timeout_ms, rx, rep);
		if (!status && rep->h.type == RSB_REPLY) {
			rs_close_socket_untrusted(s); /* refused: the broker closed it */
			break;
		}
		if (!status) {
			kept_put(s, path);
			break;
		}
		rs_close_socket_untrusted(s);
		/* A kept connection the broker closed meanwhile: once more on a
		 * new one. */
		if (!(reused && status == RSHARE_E_IO &&
		      (rs_last_errno() == EPIPE || rs_last_errno() == ECONNRESET)))
			break;
		status = RSHARE_OK;
	}
	return status;
}

static int check_name(const char *name)
{
	if (!name)
		return rs_fail(RSHARE_E_INVAL, 0, "name is NULL");
	return rsb_check_name(name, strnlen(name, RSHARE_SHARE_NAME_MAX + 1));
}

/* Options: read only the fields size covers; a larger struct from a newer
 * header is accepted only if what we do not know is zero. */
static int read_opts(const rshare_publish_opts *o, uint32_t *flags, const uint32_t **uids,
		     uint32_t *nu, const uint32_t **gids, uint32_t *ng)
{
	struct rshare_publish_opts c = { 0 };

	*flags = *nu = *ng = 0;
	*uids = *gids = NULL;
	if (!o)
		return RSHARE_OK;
	if (o->size < sizeof(size_t))
		return rs_fail(RSHARE_E_INVAL, 0, "opts->size is %zu; set it to sizeof(opts)",
			       o->size);
	memcpy(&c, o, o->size < sizeof(c) ? o->size : sizeof(c));
	for (size_t i = sizeof(c); i < o->size; i++)
		if (((const uint8_t *)o)[i])
			return rs_fail(RSHARE_E_INVAL, 0, "opts has options this library "
				       "does not know (byte %zu is set)", i);
	if (c.flags & ~(uint32_t)RSHARE_PUBLISH_PERSISTENT)
		return rs_fail(RSHARE_E_INVAL, 0, "unknown publish flags 0x%x", c.flags);
	if (c.reserved)
		return rs_fail(RSHARE_E_INVAL, 0, "opts->reserved is not 0");
	if (c.n_uids > RSHARE_SHARE_IDS_MAX || c.n_gids > RSHARE_SHARE_IDS_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "%u uids and %u gids (at most %d each)",
			       c.n_uids, c.n_gids, RSHARE_SHARE_IDS_MAX);
	if ((c.n_uids && !c.uids) || (c.n_gids && !c.gids))
		return rs_fail(RSHARE_E_INVAL, 0, "opts lists ids through a NULL pointer");
	*flags = c.flags;
	*uids = c.uids;
	*nu = c.n_uids;
	*gids = c.gids;
	*ng = c.n_gids;
	return RSHARE_OK;
}

static int publish(const char *endpoint, const char *name, const rshare_device *dev,
		   const int *fds, size_t nfds, const void *payload, size_t len,
		   const rshare_publish_opts *opts, rshare_share **share)
{
	const uint32_t *uids, *gids;
	uint32_t flags, nu, ng;
	struct share_conn *sc;
	struct rs_slot *dslot, *slot;
	struct reply rep;
	uint8_t *buf;
	size_t n;
	int s, status;

	if (!share)
		return rs_fail(RSHARE_E_INVAL, 0, "share is NULL");
	if (len > RSHARE_PAYLOAD_MAX || (!payload && len))
		return rs_fail(RSHARE_E_INVAL, 0, "payload of %zu bytes%s (at most %d)", len,
			       payload ? "" : " at NULL", RSHARE_PAYLOAD_MAX);
	if (nfds > RSHARE_CHANNEL_FDS_MAX || (!fds && nfds))
		return rs_fail(RSHARE_E_INVAL, 0, "%zu extra fds%s (at most %d)", nfds,
			       fds ? "" : " at NULL", RSHARE_CHANNEL_FDS_MAX);
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] < 0)
			return rs_fail(RSHARE_E_INVAL, 0, "fds[%zu] is %d", i, fds[i]);
	status = check_name(name);
	if (!status)
		status = read_opts(opts, &flags, &uids, &nu, &gids, &ng);
	if (status)
		return status;
	buf = malloc(RX_MAX > RSB_MSG_MAX ? RX_MAX : RSB_MSG_MAX);
	sc = calloc(1, sizeof(*sc));
	if (!buf || !sc) {
		free(buf);
		free(sc);
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a share");
	}
	status = rs_pin(dev, RS_OBJ_DEVICE, &dslot);
	if (status)
		goto out;
	n = rsb_encode_publish(buf, name, flags & RSHARE_PUBLISH_PERSISTENT ? RSB_PUB_PERSISTENT : 0,
			       uids, nu, gids, ng, (uint32_t)nfds, payload, (uint32_t)len);
	status = rsb_connect(endpoint, REPLY_MS, &s);
	if (!status) {
		/* Pinned while sending: the fd cannot be closed under us. */
		int dfds[2 + RSHARE_CHANNEL_FDS_MAX];
		int ndev = rs_ctx_fds(&dslot->u.dev->ctx, dfds);

		for (size_t i = 0; i < nfds; i++)
			dfds[ndev + (int)i] = fds[i];
		status = send_request(s, buf, n, dfds, (size_t)ndev + nfds);
		rs_unpin(dslot);
		status = after_send(s, status, RSB_PUBLISH, REPLY_MS, buf, &rep);
		if (!status && rep.h.status)
			status = reply_failure(&rep, RSB_PUBLISH);
		if (!status)
			status = rs_slot_reserve(&slot);
		if (status) {
			rs_close_socket_untrusted(s);
			goto out;
		}
		sc->fd = s;
		memcpy(sc->name, name, strlen(name) + 1);
		slot->u.any = sc;
		sc = NULL;
		*share = rs_slot_publish(slot, RS_OBJ_SHARE);
	} else {
		rs_unpin(dslot);
	}
out:
	free(buf);
	free(sc);
	return status;
}

int rshare_broker_publish(const char *endpoint, const char *name, const rshare_device *dev,
			  const void *payload, size_t len, const rshare_publish_opts *opts,
			  rshare_share **share)
{
	RS_RETURN(publish(endpoint, name, dev, NULL, 0, payload, len, opts, share));
}

int rshare_broker_publishv(const char *endpoint, const char *name, const rshare_device *dev,
			   const int *fds, size_t nfds, const void *payload, size_t len,
			   const rshare_publish_opts *opts, rshare_share **share)
{
	RS_RETURN(publish(endpoint, name, dev, fds, nfds, payload, len, opts, share));
}

int rshare_broker_withdraw(rshare_share *share)
{
	struct rs_slot *slot;
	struct share_conn *sc;
	struct reply rep;
	uint8_t *buf;
	int status = rs_retire_begin(share, RS_OBJ_SHARE, &slot);

	if (status)
		RS_RETURN(status);
	sc = slot->u.any;
	/* Withdraw explicitly (a persistent share would outlive the
	 * connection); whatever the answer, closing the connection ends a
	 * non-persistent share, and a broker that is gone holds nothing.
	 * Without memory for the request nothing is done: the share and its
	 * handle stay as they were. */
	buf = malloc(RX_MAX);
	if (!buf) {
		rs_retire_cancel(slot);
		RS_RETURN(rs_fail(RSHARE_E_NOMEM, ENOMEM,
				  "out of memory for the withdrawal (the share is still published)"));
	}
	if (send_request(sc->fd, buf, rsb_encode_withdraw(buf, sc->name, RSB_WD_OWN), NULL, 0) ==
	    RSHARE_OK)
		recv_reply(sc->fd, RSB_WITHDRAW, REPLY_MS, buf, &rep);
	free(buf);
	rs_close_socket_untrusted(sc->fd);
	free(sc);
	rs_retire_commit(slot);
	return RSHARE_OK;
}

int rshare_broker_withdraw_name(const char *endpoint, const char *name)
{
	struct reply rep;
	uint8_t *buf;
	int status = check_name(name);

	if (status)
		RS_RETURN(status);
	buf = malloc(RX_MAX);
	if (!buf)
		RS_RETURN(rs_fail(RSHARE_E_NOMEM, ENOMEM, "out of memory"));
	status = transact(endpoint, buf, rsb_encode_withdraw(buf, name, 0), RSB_WITHDRAW,
			  REPLY_MS, buf, &rep, NULL);
	if (!status && rep.h.status)
		status = reply_failure(&rep, RSB_WITHDRAW);
	free(buf);
	RS_RETURN(status);
}

/* Where an attach puts the share's extra fds: NULL for rshare_broker_attach,
 * which asks for none (a share with extra fds is refused by the broker). */
struct attach_fds {
	int *fds;
	size_t cap, *n;
};

/* Let go of what an attach reply carried (the device fd, extra fds). */
static void drop_reply_fds(struct reply *rep)
{
	rs_close_untrusted(rep->fd);
	rs_close_untrusted(rep->ledger_fd);
	rep->fd = rep->ledger_fd = -1;
	for (int i = 0; i < rep->nextra; i++)
		rs_close_untrusted(rep->extra[i]);
	rep->nextra = 0;
}

/* What an attach reply means for the caller: the share (the device fd
 * adopted into *dev, taken whatever happens, and its extra fds into x) or
 * the broker's refusal. */
static int attach_result(struct reply *rep, uint32_t wire_cap, rshare_device **dev,
			 const struct attach_fds *x, void *payload, size_t cap, size_t *len)
{
	int status;

	if (!rep->h.status && rep->nextra && (!x || !x->fds || x->cap < (size_t)rep->nextra)) {
		int n = rep->nextra;

		drop_reply_fds(rep); /* nothing attached: the share stays for a retry */
		if (!x)
			return rs_fail(RSHARE_E_PROTOCOL, 0, "broker sent %d extra fds unasked", n);
		*x->n = (size_t)n;
		return rs_fail(RSHARE_E_NOSPACE, 0, "room for %zu fds, the share has %d "
			       "(nothing attached)", x->fds ? x->cap : 0, n);
	}
	if (rep->h.status == RSHARE_E_NOSPACE && rep->h.len == 4 &&
	    rs_get32(rep->body) > wire_cap && rs_get32(rep->body) <= RSHARE_PAYLOAD_MAX) {
		*len = rs_get32(rep->body);
		return rs_fail(RSHARE_E_NOSPACE, 0,
			       "payload buffer of %zu bytes too small, %zu needed (nothing attached)",
			       payload ? cap : 0, *len);
	}
	if (rep->h.status)
		return reply_failure(rep, RSB_ATTACH); /* NOSPACE without its length too */
	if (rep->h.len > wire_cap) {
		drop_reply_fds(rep);
		return rs_fail(RSHARE_E_PROTOCOL, 0, "broker sent %u bytes for a %u-byte buffer",
			       rep->h.len, wire_cap);
	}
	/* takes the device's fds (both, with a ledger) */
	status = rs_device_adopt_received(rep->fd, rep->ledger_fd, (void **)dev);
	rep->fd = rep->ledger_fd = -1;
	if (status) {
		drop_reply_fds(rep);
		return status;
	}
	for (int i = 0; i < rep->nextra; i++)
		x->fds[i] = rep->extra[i]; /* the caller's now */
	if (x)
		*x->n = (size_t)rep->nextra;
	rep->nextra = 0;
	if (rep->h.len)
		memcpy(payload, rep->body, rep->h.len);
	*len = rep->h.len;
	return RSHARE_OK;
}

static int attach(const char *endpoint, const char *name, int timeout_ms, rshare_device **dev,
		  const struct attach_fds *x, void *payload, size_t cap, size_t *len)
{
	uint32_t wire_cap = !payload ? 0 : cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	struct reply rep;
	uint8_t *buf;
	size_t n;
	int status;

	if (!dev || !len || (x && !x->n))
		return rs_fail(RSHARE_E_INVAL, 0, "%s is NULL", !dev ? "dev" : !len ? "len" : "nfds");
	status = check_name(name);
	if (status)
		return status;
	buf = malloc(RX_MAX);
	if (!buf)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "out of memory");
	/* With x, the header says extra fds are welcome (RSB_FLAG_FDS). */
	n = rsb_encode_attach(buf, name, timeout_ms < 0 ? RSB_WAIT_FOREVER : (uint32_t)timeout_ms,
			      wire_cap, x ? RSB_FLAG_FDS : 0);
	status = transact_kept(endpoint, buf, n, RSB_ATTACH,
			       timeout_ms < 0 ? -1 : (int64_t)timeout_ms + REPLY_MS, buf, &rep);
	if (!status)
		status = attach_result(&rep, wire_cap, dev, x, payload, cap, len);
	free(buf);
	return status;
}

int rshare_broker_attach(const char *endpoint, const char *name, int timeout_ms,
			 rshare_device **dev, void *payload, size_t cap, size_t *len)
{
	RS_RETURN(attach(endpoint, name, timeout_ms, dev, NULL, payload, cap, len));
}

int rshare_broker_attachv(const char *endpoint, const char *name, int timeout_ms,
			  rshare_device **dev, int *fds, size_t fds_cap, size_t *nfds,
			  void *payload, size_t cap, size_t *len)
{
	struct attach_fds x = { fds, fds_cap, nfds };

	RS_RETURN(attach(endpoint, name, timeout_ms, dev, &x, payload, cap, len));
}

/* A request of type (RSB_LIST, RSB_WAITING) answered by a JSON text,
 * possibly in several messages, copied out with the (buf, cap, len)
 * convention. */
static int json_request(const char *endpoint, uint8_t type, char *buf, size_t cap,
			size_t *len)
{
	struct reply rep;
	uint8_t *rx, *json = NULL;
	size_t n = 0;
	int s = -1, status;

	if (!len)
		return rs_fail(RSHARE_E_INVAL, 0, "len is NULL");
	rx = malloc(RX_MAX);
	if (!rx)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "out of memory");
	status = transact(endpoint, rx, rsb_encode_bare(rx, type), type, REPLY_MS, rx, &rep, &s);
	while (!status) {
		uint8_t *bigger;

		if (rep.h.status) {
			status = reply_failure(&rep, type);
			break;
		}
		/* Every chunk but the last is at least half full (the broker
		 * fills them with whole entries): a broker sending endless
		 * small or empty ones is cut short. */
		if ((rep.h.flags & RSB_FLAG_MORE) && rep.h.len < RSB_CHUNK / 2) {
			status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker list chunk of %u bytes with "
					 "more to follow (at least %d expected)", rep.h.len,
					 RSB_CHUNK / 2);
			break;
		}
		if (n + rep.h.len > LIST_MAX || !(bigger = realloc(json, n + rep.h.len + 1))) {
			status = rs_fail(RSHARE_E_NOMEM, 0, "broker list longer than %u bytes",
					 LIST_MAX);
			break;
		}
		json = bigger;
		memcpy(json + n, rep.body, rep.h.len);
		n += rep.h.len;
		if (!(rep.h.flags & RSB_FLAG_MORE))
			break;
		status = recv_reply(s, type, REPLY_MS, rx, &rep);
	}
	if (s >= 0)
		rs_close_socket_untrusted(s);
	if (!status && n == 0)
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "empty broker list reply");
	if (!status) {
		for (size_t i = 0; i < n; i++)
			if (json[i] < 32 || json[i] > 126) {
				status = rs_fail(RSHARE_E_PROTOCOL, 0, "broker list is not plain text");
				break;
			}
	}
	if (!status)
		status = rs_copy_str((const char *)json, n, buf, cap, len);
	free(json);
	free(rx);
	return status;
}

int rshare_broker_list(const char *endpoint, char *buf, size_t cap, size_t *len)
{
	RS_RETURN(json_request(endpoint, RSB_LIST, buf, cap, len));
}

int rshare_broker_waiting(const char *endpoint, char *buf, size_t cap, size_t *len)
{
	RS_RETURN(json_request(endpoint, RSB_WAITING, buf, cap, len));
}

/* ---- attach from an event loop (since 1.2) ---------------------------------
 * An operation owns one connection on which the broker keeps the request
 * waiting (no time limit, the largest payload, so the reply needs no
 * second round trip whatever the caller's buffer). Its reply is read once,
 * kept in rx until finished (a buffer too small keeps it), and released
 * with the operation. The lock serialises calls on one operation; ending
 * it (finish or cancel) retires the handle, which waits for calls in it. */
struct attach_op {
	pthread_mutex_t lock;
	int fd;
	bool answered;   /* rep holds the broker's reply */
	bool over;       /* finished: only the retirement is left */
	struct reply rep; /* its fds (device, ledger, extra) are the op's until finished */
	uint8_t *rx;
};

static void attach_op_free(struct attach_op *op)
{
	drop_reply_fds(&op->rep); /* a share that arrived unfinished, extra fds included */
	rs_close_socket_untrusted(op->fd);
	pthread_mutex_destroy(&op->lock);
	free(op->rx);
	free(op);
}

/* hflags: RSB_FLAG_FDS when the share's extra fds are welcome (startv). */
static int attach_start(const char *endpoint, const char *name, uint8_t hflags,
			rshare_attach **out)
{
	struct attach_op *op;
	struct rs_slot *slot;
	int status;

	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "op is NULL");
	status = check_name(name);
	if (status)
		return status;
	op = calloc(1, sizeof(*op));
	if (!op || !(op->rx = malloc(RX_MAX))) {
		free(op);
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate an attach operation");
	}
	pthread_mutex_init(&op->lock, NULL);
	op->rep.fd = op->rep.ledger_fd = -1;
	status = rsb_connect(endpoint, START_CONNECT_MS, &op->fd);
	if (status) {
		op->fd = -1;
		pthread_mutex_destroy(&op->lock);
		free(op->rx);
		free(op);
		return status;
	}
	status = send_request(op->fd, op->rx,
			      rsb_encode_attach(op->rx, name, RSB_WAIT_FOREVER, RSHARE_PAYLOAD_MAX,
						hflags),
			      NULL, 0);
	if (!status)
		status = rs_slot_reserve(&slot);
	if (status) {
		attach_op_free(op);
		return status;
	}
	slot->u.any = op;
	*out = rs_slot_publish(slot, RS_OBJ_ATTACH);
	return RSHARE_OK;
}

int rshare_broker_attach_start(const char *endpoint, const char *name, rshare_attach **out)
{
	RS_RETURN(attach_start(endpoint, name, 0, out));
}

int rshare_broker_attach_startv(const char *endpoint, const char *name, rshare_attach **out)
{
	RS_RETURN(attach_start(endpoint, name, RSB_FLAG_FDS, out));
}

int rshare_attach_fd(const rshare_attach *h, int *fd)
{
	struct rs_slot *slot;
	int status;

	if (!fd)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "fd is NULL"));
	status = rs_pin(h, RS_OBJ_ATTACH, &slot);
	if (status)
		RS_RETURN(status);
	*fd = ((struct attach_op *)slot->u.any)->fd; /* fixed for the op's life */
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_attach_wait(rshare_attach *h, int timeout_ms, uint32_t flags)
{
	struct rs_slot *slot;
	int status, r;

	if (flags & ~(uint32_t)RSHARE_WAIT_SIGNAL)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "unknown wait flags 0x%x", flags));
	status = rs_pin(h, RS_OBJ_ATTACH, &slot);
	if (status)
		RS_RETURN(status);
	r = poll_readable(((struct attach_op *)slot->u.any)->fd, timeout_ms,
			  flags & RSHARE_WAIT_SIGNAL);
	if (r == 0)
		status = rs_fail(RSHARE_E_AGAIN, ETIMEDOUT, "no answer within %d ms", timeout_ms);
	else if (r < 0 && errno == EINTR)
		status = rs_fail(RSHARE_E_AGAIN, EINTR, "interrupted by a signal");
	else if (r < 0)
		status = rs_fail(RSHARE_E_IO, errno, "poll on the broker socket failed");
	rs_unpin(slot);
	RS_RETURN(status);
}

/* Read the broker's reply into op if it is there. RSHARE_E_AGAIN if not. */
static int attach_op_read(struct attach_op *op)
{
	struct pollfd p = { .fd = op->fd, .events = POLLIN };
	int status;

	if (op->answered)
		return RSHARE_OK;
	if (poll(&p, 1, 0) == 0)
		return rs_fail(RSHARE_E_AGAIN, EAGAIN, "the share has not arrived yet");
	status = recv_reply(op->fd, RSB_ATTACH, 0, op->rx, &op->rep);
	if (!status)
		op->answered = true;
	return status;
}

/* End the operation behind h (its last call, or a cancel). The retirement
 * waits for every call in the op, and a thread in rshare_attach_wait()
 * is in it for as long as its poll lasts (without a limit, maybe): the
 * socket is shut down first, which wakes that poll. Under the op's lock,
 * with the op marked over: a finish after it says STALE, not "the broker
 * closed the connection". */
static int attach_op_end(rshare_attach *h)
{
	struct attach_op *op;
	struct rs_slot *slot;
	int status = rs_pin(h, RS_OBJ_ATTACH, &slot);

	if (status)
		return status;
	op = slot->u.any;
	pthread_mutex_lock(&op->lock);
	op->over = true;
	shutdown(op->fd, SHUT_RDWR);
	pthread_mutex_unlock(&op->lock);
	rs_unpin(slot);
	status = rs_retire_begin(h, RS_OBJ_ATTACH, &slot);
	if (status)
		return status;
	attach_op_free(slot->u.any);
	rs_retire_commit(slot);
	return RSHARE_OK;
}

/* Whether op's share can be handed over now: the caller's room for the
 * payload and (x) the extra fds. When it cannot, op keeps the share and
 * the caller learns what to change; RSHARE_OK when it can. */
static int attach_op_fits(const struct attach_op *op, const struct attach_fds *x,
			  const void *payload, size_t cap, size_t *len)
{
	size_t room = payload ? cap : 0, nextra = (size_t)op->rep.nextra;

	if (nextra && !x)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "the share carries %zu fd(s) besides the "
			       "device (a buffer's memory): finish with rshare_attach_finishv "
			       "(the share is kept)", nextra);
	if (x)
		*x->n = nextra; /* both sizes told at once: one retry suffices */
	if (x && nextra > (x->fds ? x->cap : 0)) {
		*len = op->rep.h.len;
		return rs_fail(RSHARE_E_NOSPACE, 0, "room for %zu fds, the share has %zu (and "
			       "%u payload bytes; the share is kept)", x->fds ? x->cap : 0, nextra,
			       op->rep.h.len);
	}
	if (op->rep.h.len > room) {
		*len = op->rep.h.len;
		return rs_fail(RSHARE_E_NOSPACE, 0, "payload buffer of %zu bytes too small, %u "
			       "needed (the share is kept)", room, op->rep.h.len);
	}
	return RSHARE_OK;
}

static int attach_finish(rshare_attach *h, rshare_device **dev, const struct attach_fds *x,
			 void *payload, size_t cap, size_t *len)
{
	struct attach_op *op;
	struct rs_slot *slot;
	bool end;
	int status;

	if (!dev || !len || (x && !x->n))
		return rs_fail(RSHARE_E_INVAL, 0, "%s is NULL", !dev ? "dev" : !len ? "len" : "nfds");
	status = rs_pin(h, RS_OBJ_ATTACH, &slot);
	if (status)
		return status;
	op = slot->u.any;
	pthread_mutex_lock(&op->lock);
	if (op->over)
		status = rs_fail(RSHARE_E_STALE, 0, "attach operation %p already finished",
				 (void *)h);
	else
		status = attach_op_read(op);
	if (!status && op->rep.h.status == RSHARE_OK)
		status = attach_op_fits(op, x, payload, cap, len); /* failing: the share is kept */
	else if (status && status != RSHARE_E_AGAIN && status != RSHARE_E_STALE)
		op->over = true; /* the connection failed */
	if (!status) {
		status = attach_result(&op->rep, RSHARE_PAYLOAD_MAX, dev, x, payload, cap, len);
		op->over = true;
	}
	end = op->over && status != RSHARE_E_STALE;
	pthread_mutex_unlock(&op->lock);
	rs_unpin(slot);
	if (end)
		attach_op_end(h); /* unless a cancel in another thread was first */
	return status;
}

int rshare_attach_finish(rshare_attach *h, rshare_device **dev, void *payload, size_t cap,
			 size_t *len)
{
	RS_RETURN(attach_finish(h, dev, NULL, payload, cap, len));
}

int rshare_attach_finishv(rshare_attach *h, rshare_device **dev, int *fds, size_t fds_cap,
			  size_t *nfds, void *payload, size_t cap, size_t *len)
{
	struct attach_fds x = { fds, fds_cap, nfds };

	RS_RETURN(attach_finish(h, dev, &x, payload, cap, len));
}

int rshare_attach_cancel(rshare_attach *h)
{
	RS_RETURN(attach_op_end(h));
}
