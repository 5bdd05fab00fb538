/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker's serving loop: one thread, non-blocking sockets and poll(),
 * so a client that is slow, silent or hostile costs the others nothing.
 *
 * SOCK_SEQPACKET keeps message boundaries: a request arrives whole or not
 * at all, so there is no partial state to time out; a connection that sends
 * no request within the idle time (and holds no share and waits for
 * none) is closed. A request that does not parse gets a PROTOCOL reply and
 * its connection is closed; every fd a message carried is closed unless a
 * valid publish keeps it. Replies are sent without blocking; a client that
 * does not read them is dropped. Only list replies, which can be long, are
 * queued and written as the socket drains.
 *
 * Shares live in a hash table by name. A share remembers the connection
 * that published it; when that connection ends (the publisher exited or was
 * killed: the kernel closes its socket and poll() reports it at once) its
 * shares are withdrawn, except persistent ones.
 */
#include "broker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "proto.h"
#include "rshare/rshare.h"
#include "util/error.h"
#include "util/fdutil.h"
#include "util/le.h"
#include "util/memfd.h"

#define BUCKETS 1024
#define MAX_CONNS 4096
#define MAX_CONNS_OTHER 256 /* per uid, for uids other than root and the broker's */
#define MAX_SHARES_OTHER 256 /* the same for shares, persistent ones included */
#define MAX_SHARES 65536
#define MAX_PAYLOAD_BYTES (256u << 20) /* all shares' payloads together */
/* A publish's device fd and extra fds, and room to see (and close) more. */
#define MAX_FDS (1 + RSHARE_CHANNEL_FDS_MAX + 1)
#define BATCH 16           /* requests served per connection per wake-up */
#define IDLE_MS_DEFAULT 10000
#define ACCEPT_PAUSE_MS 100 /* out of fds: how long the listener rests */

struct share {
	struct share *next;      /* hash chain */
	char name[RSHARE_SHARE_NAME_MAX + 1];
	rshare_device *dev;      /* the broker's reference to the context */
	int dev_fd;
	int fds[RSHARE_CHANNEL_FDS_MAX]; /* extra fds (sealed memfds: buffers), since 1.2 */
	int nfds;
	uint8_t *payload;
	uint32_t len;
	char blobs[96];          /* JSON: the payload's blob kinds, or null */
	uid_t owner_uid;
	pid_t owner_pid;
	bool persistent;
	uint32_t n_uids, n_gids;
	uint32_t uids[RSHARE_SHARE_IDS_MAX], gids[RSHARE_SHARE_IDS_MAX];
	uint64_t attaches;
	time_t created;
	struct conn *publisher;  /* NULL once a persistent share's publisher left */
};

struct conn {
	int fd;
	bool dead;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups;           /* supplementary groups at connect time */
	int ngroups;
	int nshares;             /* shares this connection published */
	uint64_t idle_deadline;  /* ms; 0 while it publishes or waits */
	bool waiting;            /* an attach waits for its name */
	uint64_t wait_deadline;  /* ms; UINT64_MAX: no limit */
	uint32_t wait_cap;
	bool wait_fds;           /* the waiting attach takes extra fds (RSB_FLAG_FDS) */
	char wait_name[RSHARE_SHARE_NAME_MAX + 1];
	uint8_t *out;            /* queued list reply */
	size_t out_len, out_off;
};

struct rsb_server {
	struct rsb_listener l;
	int wake[2];
	struct conn **conns;
	size_t nconns;
	struct share *buckets[BUCKETS];
	size_t nshares;
	size_t payload_bytes;    /* held by all shares, at most MAX_PAYLOAD_BYTES */
	uint64_t idle_ms;
	uint64_t accept_after;   /* ms; the listener is not polled before */
	uint8_t *rx;             /* one request, RSB_MSG_MAX + 1 bytes */
	struct pollfd *pfds;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rshare broker[%d]: %s\n", (int)getpid(), line);
}

static unsigned hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h % BUCKETS;
}

static struct share **find_slot(struct rsb_server *s, const char *name)
{
	struct share **p = &s->buckets[hash_name(name)];

	while (*p && strcmp((*p)->name, name) != 0)
		p = &(*p)->next;
	return p;
}

static void drop_share(struct rsb_server *s, struct share **p)
{
	struct share *sh = *p;

	*p = sh->next;
	if (sh->publisher)
		sh->publisher->nshares--;
	rshare_device_close(sh->dev);
	for (int i = 0; i < sh->nfds; i++)
		close(sh->fds[i]);
	s->payload_bytes -= sh->len;
	free(sh->payload);
	free(sh);
	s->nshares--;
}

/* ---- replies ---- */

/* Send one reply message now, with nfds fds attached. A client whose
 * socket is full is not reading its replies: it is dropped. */
static void send_msg_fds(struct conn *c, uint8_t type, uint8_t flags, int32_t status,
			 const void *body, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
	} ctl;
	uint8_t hdr[RSB_HDR];
	struct iovec iov[2] = { { hdr, RSB_HDR }, { (void *)body, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t r;

	if (c->dead)
		return;
	rsb_put_header(hdr, type, flags, (uint32_t)len, status);
	if (nfds > 0)
		rs_cmsg_attach_fds(&msg, ctl.buf, sizeof(ctl.buf), fds, (size_t)nfds);
	do
		r = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		c->dead = true; /* gone, or not reading its replies */
}

/* The same with one fd, or none (-1). */
static void send_msg(struct conn *c, uint8_t type, uint8_t flags, int32_t status,
		     const void *body, size_t len, int fd)
{
	send_msg_fds(c, type, flags, status, body, len, &fd, fd >= 0);
}

/* An error reply: the status and rshare_last_error()'s text. */
static void send_error(struct conn *c, uint8_t type, int status)
{
	const char *text = rs_last_error();
	size_t n = strlen(text);

	send_msg(c, type | RSB_REPLY, 0, status, text, n < RSB_TEXT_MAX ? n : RSB_TEXT_MAX, -1);
}

/* ---- policy ---- */

static bool allowed(const struct share *sh, const struct conn *c)
{
	if (c->uid == 0 || c->uid == sh->owner_uid)
		return true;
	for (uint32_t i = 0; i < sh->n_uids; i++)
		if (sh->uids[i] == c->uid)
			return true;
	for (uint32_t i = 0; i < sh->n_gids; i++) {
		if (sh->gids[i] == c->gid)
			return true;
		for (int g = 0; g < c->ngroups; g++)
			if (sh->gids[i] == c->groups[g])
				return true;
	}
	return false;
}

/* Hand sh to the attacher c (with_fds: it takes extra fds), or say why not. */
static void serve_attach(struct share *sh, struct conn *c, uint32_t cap, bool with_fds)
{
	int fds[1 + RSHARE_CHANNEL_FDS_MAX];
	uint8_t need[4];

	c->waiting = false;
	if (!allowed(sh, c)) {
		logf_("refused attach to \"%s\" (owner uid %u) by uid %u gid %u pid %d: "
		      "not the owner, not root, not listed",
		      sh->name, (unsigned)sh->owner_uid, (unsigned)c->uid, (unsigned)c->gid,
		      (int)c->pid);
		rs_fail(RSHARE_E_PERM, 0,
			"uid %u may not attach to share \"%s\" (owner uid %u; not listed)",
			(unsigned)c->uid, sh->name, (unsigned)sh->owner_uid);
		send_error(c, RSB_ATTACH, RSHARE_E_PERM);
		return;
	}
	if (sh->len > cap) {
		rs_put32(need, sh->len);
		send_msg(c, RSB_ATTACH | RSB_REPLY, 0, RSHARE_E_NOSPACE, need, 4, -1);
		return;
	}
	if (sh->nfds && !with_fds) {
		rs_fail(RSHARE_E_PROTOCOL, 0, "share \"%s\" carries %d fd(s) besides the device "
			"(a buffer's memory): attach with rshare_broker_attachv", sh->name,
			sh->nfds);
		send_error(c, RSB_ATTACH, RSHARE_E_PROTOCOL);
		return;
	}
	fds[0] = sh->dev_fd;
	memcpy(fds + 1, sh->fds, (size_t)sh->nfds * sizeof(int));
	send_msg_fds(c, RSB_ATTACH | RSB_REPLY, 0, RSHARE_OK, sh->payload, sh->len, fds,
		     1 + sh->nfds);
	if (!c->dead)
		sh->attaches++;
}

/* ---- requests ---- */

/* The kinds of the blobs that make up the payload, as a JSON array, or
 * null if it is not a sequence of valid blobs. */
static void describe_blobs(struct share *sh)
{
	size_t off = 0, n = 1;
	char *out = sh->blobs;

	out[0] = '[';
	while (off < sh->len) {
		size_t blen;
		int kind;
		const char *name;

		if (rshare_blob_size(sh->payload + off, sh->len - off, &blen) != RSHARE_OK ||
		    rshare_blob_kind(sh->payload + off, blen, &kind) != RSHARE_OK)
			goto not_blobs;
		name = rshare_kind_name(kind);
		if (n + strlen(name) + 4 >= sizeof(sh->blobs))
			goto not_blobs;
		n += (size_t)sprintf(out + n, "%s\"%s\"", n > 1 ? "," : "", name);
		off += blen;
	}
	memcpy(out + n, "]", 2);
	return;
not_blobs:
	strcpy(out, "null");
}

/* Root and the broker's own user are trusted with its limits; others get
 * a share of them (persistent shares outlive their publisher: one user
 * could otherwise fill the broker's fds for good). */
static bool other_user(uid_t uid)
{
	return uid != 0 && uid != geteuid();
}

static int shares_of(const struct rsb_server *s, uid_t uid)
{
	int n = 0;

	for (size_t b = 0; b < BUCKETS; b++)
		for (const struct share *sh = s->buckets[b]; sh; sh = sh->next)
			n += sh->owner_uid == uid;
	return n;
}

static void do_publish(struct rsb_server *s, struct conn *c, const struct rsb_request *r,
		       int *fds, int nfds)
{
	struct share **slot = find_slot(s, r->name), *sh;
	rshare_device *dev;
	int status;

	if (nfds < 1 || nfds > 1 + RSHARE_CHANNEL_FDS_MAX) {
		rs_fail(RSHARE_E_PROTOCOL, 0, "publish carried %d fds, 1 to %d expected", nfds,
			1 + RSHARE_CHANNEL_FDS_MAX);
		send_error(c, RSB_PUBLISH, RSHARE_E_PROTOCOL);
		c->dead = true;
		return;
	}
	/* Extra fds are buffers' memory: sealed memfds, nothing else (no
	 * socket or pipe is kept and handed out). */
	for (int i = 1; i < nfds; i++) {
		struct stat st;

		status = fstat(fds[i], &st) ? rs_fail(RSHARE_E_INVAL, errno, "fd %d", i)
					    : rs_memfd_check(fds[i], (uint64_t)st.st_size,
							     (uint64_t)st.st_dev,
							     (uint64_t)st.st_ino);
		if (status) {
			rs_fail_context(status, "publish: extra fd %d", i);
			send_error(c, RSB_PUBLISH, status);
			return;
		}
	}
	if (*slot) {
		rs_fail(RSHARE_E_BUSY, 0, "share \"%s\" is already published by uid %u pid %d",
			r->name, (unsigned)(*slot)->owner_uid, (int)(*slot)->owner_pid);
		send_error(c, RSB_PUBLISH, RSHARE_E_BUSY);
		return;
	}
	if (other_user(c->uid) && shares_of(s, c->uid) >= MAX_SHARES_OTHER) {
		rs_fail(RSHARE_E_BUSY, 0, "uid %u holds %d shares, its limit", (unsigned)c->uid,
			MAX_SHARES_OTHER);
		send_error(c, RSB_PUBLISH, RSHARE_E_BUSY);
		return;
	}
	if (s->nshares >= MAX_SHARES ||
	    s->payload_bytes + r->payload_len > MAX_PAYLOAD_BYTES) {
		rs_fail(RSHARE_E_NOMEM, 0, "the broker holds %zu shares of %zu payload bytes "
			"(limits: %d shares, %u bytes)", s->nshares, s->payload_bytes, MAX_SHARES,
			MAX_PAYLOAD_BYTES);
		send_error(c, RSB_PUBLISH, RSHARE_E_NOMEM);
		return;
	}
	sh = calloc(1, sizeof(*sh));
	if (sh && r->payload_len)
		sh->payload = malloc(r->payload_len);
	if (!sh || (r->payload_len && !sh->payload)) {
		if (sh)
			free(sh);
		rs_fail(RSHARE_E_NOMEM, ENOMEM, "broker out of memory");
		send_error(c, RSB_PUBLISH, RSHARE_E_NOMEM);
		return;
	}
	/* Validates the fd: a device context the library can import. */
	status = rs_device_adopt(fds[0], -1, (void **)&dev);
	fds[0] = -1; /* taken, even on failure */
	if (status) {
		free(sh->payload);
		free(sh);
		send_error(c, RSB_PUBLISH, status);
		return;
	}
	rshare_device_fd(dev, &sh->dev_fd);
	sh->dev = dev;
	for (int i = 1; i < nfds; i++) { /* taken */
		sh->fds[sh->nfds++] = fds[i];
		fds[i] = -1;
	}
	memcpy(sh->name, r->name, sizeof(sh->name));
	if (r->payload_len)
		memcpy(sh->payload, r->payload, r->payload_len);
	sh->len = r->payload_len;
	sh->owner_uid = c->uid;
	sh->owner_pid = c->pid;
	sh->persistent = r->flags & RSB_PUB_PERSISTENT;
	sh->n_uids = r->n_uids;
	sh->n_gids = r->n_gids;
	memcpy(sh->uids, r->uids, sizeof(sh->uids));
	memcpy(sh->gids, r->gids, sizeof(sh->gids));
	sh->created = time(NULL);
	sh->publisher = c;
	describe_blobs(sh);
	*slot = sh;
	s->nshares++;
	s->payload_bytes += sh->len;
	c->nshares++;
	send_msg(c, RSB_PUBLISH | RSB_REPLY, 0, RSHARE_OK, NULL, 0, -1);
	/* Attachers waiting for this name. */
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *w = s->conns[i];
		if (w->waiting && !w->dead && strcmp(w->wait_name, sh->name) == 0)
			serve_attach(sh, w, w->wait_cap, w->wait_fds);
	}
}

static void do_attach(struct rsb_server *s, struct conn *c, const struct rsb_request *r)
{
	struct share *sh = *find_slot(s, r->name);

	if (sh) {
		serve_attach(sh, c, r->cap, r->hflags & RSB_FLAG_FDS);
		return;
	}
	if (r->timeout_ms == 0) {
		rs_fail(RSHARE_E_NOT_FOUND, 0, "no share named \"%s\"", r->name);
		send_error(c, RSB_ATTACH, RSHARE_E_NOT_FOUND);
		return;
	}
	c->waiting = true;
	c->wait_cap = r->cap;
	c->wait_fds = r->hflags & RSB_FLAG_FDS;
	c->wait_deadline = r->timeout_ms == RSB_WAIT_FOREVER ? UINT64_MAX
							     : now_ms() + r->timeout_ms;
	memcpy(c->wait_name, r->name, sizeof(c->wait_name));
}

static void do_withdraw(struct rsb_server *s, struct conn *c, const struct rsb_request *r)
{
	struct share **slot = find_slot(s, r->name), *sh = *slot;

	if (!sh || ((r->flags & RSB_WD_OWN) && sh->publisher != c)) {
		rs_fail(RSHARE_E_NOT_FOUND, 0, "no share named \"%s\"%s", r->name,
			(r->flags & RSB_WD_OWN) ? " published by this connection" : "");
		send_error(c, RSB_WITHDRAW, RSHARE_E_NOT_FOUND);
		return;
	}
	if (sh->publisher != c && c->uid != 0 && c->uid != sh->owner_uid) {
		logf_("refused withdrawal of \"%s\" (owner uid %u) by uid %u pid %d", sh->name,
		      (unsigned)sh->owner_uid, (unsigned)c->uid, (int)c->pid);
		rs_fail(RSHARE_E_PERM, 0, "uid %u may not withdraw share \"%s\" (owner uid %u)",
			(unsigned)c->uid, sh->name, (unsigned)sh->owner_uid);
		send_error(c, RSB_WITHDRAW, RSHARE_E_PERM);
		return;
	}
	drop_share(s, slot);
	send_msg(c, RSB_WITHDRAW | RSB_REPLY, 0, RSHARE_OK, NULL, 0, -1);
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct share *const *)a)->name, (*(struct share *const *)b)->name);
}

/* Append to a growing buffer; false when out of memory. */
static bool put(uint8_t **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static bool put(uint8_t **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf((char *)*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return false;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return true;
		}
		uint8_t *bigger = realloc(*buf, *cap * 2 + (size_t)n);
		if (!bigger)
			return false;
		*buf = bigger;
		*cap = *cap * 2 + (size_t)n;
	}
}

static void flush_out(struct rsb_server *s, struct conn *c);

static void do_list(struct rsb_server *s, struct conn *c)
{
	struct share **all = malloc((s->nshares ? s->nshares : 1) * sizeof(*all));
	size_t n = 0, len = 0, cap = 4096;
	uint8_t *buf = malloc(cap);
	bool ok = all && buf && put(&buf, &len, &cap, "[");

	for (size_t b = 0; ok && b < BUCKETS; b++)
		for (struct share *sh = s->buckets[b]; sh; sh = sh->next)
			all[n++] = sh;
	if (ok)
		qsort(all, n, sizeof(*all), by_name);
	for (size_t i = 0; ok && i < n; i++) {
		const struct share *sh = all[i];
		ok = put(&buf, &len, &cap,
			 "%s{\"name\":\"%s\",\"owner_uid\":%u,\"owner_pid\":%d,\"persistent\":%s,"
			 "\"payload_size\":%u,\"blobs\":%s,\"attaches\":%llu,\"created\":%lld}",
			 i ? "," : "", sh->name, (unsigned)sh->owner_uid, (int)sh->owner_pid,
			 sh->persistent ? "true" : "false", sh->len, sh->blobs,
			 (unsigned long long)sh->attaches, (long long)sh->created);
	}
	ok = ok && put(&buf, &len, &cap, "]");
	free(all);
	if (!ok) {
		free(buf);
		rs_fail(RSHARE_E_NOMEM, ENOMEM, "broker out of memory listing %zu shares", n);
		send_error(c, RSB_LIST, RSHARE_E_NOMEM);
		return;
	}
	c->out = buf;
	c->out_len = len;
	c->out_off = 0;
	flush_out(s, c);
}

/* Write queued list chunks while the socket takes them; a client that
 * reads none for the idle time is dropped (expire()). */
static void flush_out(struct rsb_server *s, struct conn *c)
{
	while (c->out && !c->dead) {
		size_t left = c->out_len - c->out_off, n = left > RSB_CHUNK ? RSB_CHUNK : left;
		uint8_t hdr[RSB_HDR];
		struct iovec iov[2] = { { hdr, RSB_HDR }, { c->out + c->out_off, n } };
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t r;

		rsb_put_header(hdr, RSB_LIST | RSB_REPLY, n < left ? RSB_FLAG_MORE : 0,
			       (uint32_t)n, RSHARE_OK);
		r = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* poll for POLLOUT */
		if (r < 0) {
			c->dead = true;
			break;
		}
		c->out_off += n;
		c->idle_deadline = now_ms() + s->idle_ms;
		if (c->out_off == c->out_len)
			break;
	}
	free(c->out);
	c->out = NULL;
}

/* Read and serve one request; false when there is nothing more to read. */
static bool serve_one(struct rsb_server *s, struct conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = { s->rx, RSB_MSG_MAX + 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	struct rsb_request req;
	int fds[MAX_FDS], nfds, status;
	ssize_t r;

	do
		r = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return false;
	if (r < 0) {
		c->dead = true; /* the client left */
		return false;
	}
	nfds = rs_cmsg_take_fds(&msg, fds, MAX_FDS);
	if (r == 0) {
		/* The client left, or sent an empty record, which may carry
		 * fds all the same: they are closed. */
		for (int i = 0; i < nfds; i++)
			rs_close_quietly(fds[i]);
		c->dead = true;
		return false;
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "request too long (%s)",
				 (msg.msg_flags & MSG_TRUNC) ? "over the largest message"
							      : "too many fds");
	else if (c->waiting || c->out)
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "a new request before the reply to the last one");
	else
		status = rsb_parse_request(s->rx, (size_t)r, &req);
	c->idle_deadline = now_ms() + s->idle_ms;
	if (status) {
		uint8_t type = r >= 7 ? s->rx[6] & (uint8_t)~RSB_REPLY : 0;
		send_error(c, type, status == RSHARE_E_INVAL ? RSHARE_E_INVAL : RSHARE_E_PROTOCOL);
		c->dead = true;
	} else if (req.type == RSB_PUBLISH) {
		do_publish(s, c, &req, fds, nfds);
	} else if (nfds) {
		rs_fail(RSHARE_E_PROTOCOL, 0, "request carried %d unexpected fds", nfds);
		send_error(c, req.type, RSHARE_E_PROTOCOL);
		c->dead = true;
	} else if (req.type == RSB_ATTACH) {
		do_attach(s, c, &req);
	} else if (req.type == RSB_WITHDRAW) {
		do_withdraw(s, c, &req);
	} else {
		do_list(s, c);
	}
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			rs_close_quietly(fds[i]);
	return !c->dead;
}

/* ---- connections ---- */

static void read_creds(struct conn *c)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);

	c->uid = (uid_t)-1;
	c->gid = (gid_t)-1;
	c->pid = 0;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) == 0) {
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->pid = cr.pid;
	}
	/* The peer's supplementary groups as they were at connect time. */
	n = 0;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &n) < 0 && errno == ERANGE && n) {
		c->groups = malloc(n);
		if (c->groups &&
		    getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &n) == 0)
			c->ngroups = (int)(n / sizeof(gid_t));
	}
}

/* Read and drop what c already sent (closing any fds), so that closing it
 * does not reset the connection before the client reads the reply. */
static void discard_pending(struct rsb_server *s, struct conn *c)
{
	for (int b = 0; b < BATCH; b++) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		} ctl;
		struct iovec iov = { s->rx, RSB_MSG_MAX + 1 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				      .msg_controllen = sizeof(ctl.buf) };
		int fds[MAX_FDS], nfds;
		ssize_t r = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (r < 0)
			return;
		nfds = rs_cmsg_take_fds(&msg, fds, MAX_FDS);
		for (int i = 0; i < nfds; i++)
			rs_close_quietly(fds[i]);
		if (r == 0)
			return;
	}
}

/* Another user (not root, not the broker's) may hold only so many
 * connections: waiting attachers are never timed out, and one user filling
 * the table (or the broker's fds) would lock everyone else out. */
static bool over_quota(const struct rsb_server *s, const struct conn *c)
{
	int n = 0;

	if (!other_user(c->uid))
		return false;
	for (size_t i = 0; i < s->nconns; i++)
		n += s->conns[i]->uid == c->uid && !s->conns[i]->dead;
	return n > MAX_CONNS_OTHER;
}

static void accept_all(struct rsb_server *s)
{
	for (int k = 0; k < 64; k++) {
		int fd = accept4(s->l.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0) {
			/* Out of fds (or memory), the pending connection stays
			 * queued and poll() would report it at once, forever:
			 * rest the listener while connections close. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				s->accept_after = now_ms() + ACCEPT_PAUSE_MS;
			return;
		}
		if (s->nconns >= MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		c->fd = fd;
		read_creds(c);
		c->idle_deadline = now_ms() + s->idle_ms;
		s->conns[s->nconns++] = c;
		if (over_quota(s, c)) {
			rs_fail(RSHARE_E_BUSY, 0, "uid %u holds %d connections to the broker, "
				"its limit", (unsigned)c->uid, MAX_CONNS_OTHER);
			discard_pending(s, c);
			send_error(c, 0, RSHARE_E_BUSY);
			c->dead = true;
			continue;
		}
		/* The request usually arrived with the connection: serve it
		 * now rather than after another poll(). */
		for (int b = 0; b < BATCH && serve_one(s, c); b++)
			;
	}
}

static void close_conn(struct rsb_server *s, struct conn *c)
{
	for (size_t b = 0; b < BUCKETS && c->nshares; b++) {
		struct share **p = &s->buckets[b];
		while (*p) {
			if ((*p)->publisher != c) {
				p = &(*p)->next;
			} else if ((*p)->persistent) {
				(*p)->publisher = NULL;
				c->nshares--;
				p = &(*p)->next;
			} else {
				drop_share(s, p);
			}
		}
	}
	close(c->fd);
	free(c->out);
	free(c->groups);
	free(c);
}

/* Time out waits and silent connections; the next deadline in *next. */
static void expire(struct rsb_server *s, uint64_t now, uint64_t *next)
{
	*next = UINT64_MAX;
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (c->dead)
			continue;
		if (c->waiting) {
			if (now >= c->wait_deadline) {
				c->waiting = false;
				rs_fail(RSHARE_E_NOT_FOUND, 0, "no share named \"%s\" appeared in time",
					c->wait_name);
				send_error(c, RSB_ATTACH, RSHARE_E_NOT_FOUND);
				c->idle_deadline = now + s->idle_ms;
			} else if (c->wait_deadline < *next) {
				*next = c->wait_deadline;
			}
		}
		if (c->out) {
			/* Not reading its list reply: dropped, publisher or not. */
			if (now >= c->idle_deadline)
				c->dead = true;
			else if (c->idle_deadline < *next)
				*next = c->idle_deadline;
			continue;
		}
		if (c->waiting || c->nshares)
			continue;
		if (now >= c->idle_deadline) {
			rs_fail(RSHARE_E_PROTOCOL, 0, "no request within %llu ms",
				(unsigned long long)s->idle_ms);
			send_error(c, 0, RSHARE_E_PROTOCOL);
			c->dead = true;
		} else if (c->idle_deadline < *next) {
			*next = c->idle_deadline;
		}
	}
}

static void reap(struct rsb_server *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->dead)
			close_conn(s, s->conns[i]);
		else
			s->conns[j++] = s->conns[i];
	}
	s->nconns = j;
}

void rsb_server_run(struct rsb_server *s)
{
	for (;;) {
		uint64_t now = now_ms(), next;
		size_t n = 2;
		int timeout, r;

		expire(s, now, &next);
		reap(s);
		if (now < s->accept_after && s->accept_after < next)
			next = s->accept_after;
		timeout = next == UINT64_MAX ? -1 : next - now > INT_MAX ? INT_MAX : (int)(next - now);
		s->pfds[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		s->pfds[1] = (struct pollfd){ .fd = s->nconns < MAX_CONNS &&
							  now >= s->accept_after ? s->l.fd : -1,
					      .events = POLLIN };
		for (size_t i = 0; i < s->nconns; i++)
			s->pfds[n++] = (struct pollfd){ .fd = s->conns[i]->fd,
							.events = s->conns[i]->out ? POLLIN | POLLOUT
										   : POLLIN };
		r = poll(s->pfds, n, timeout);
		if (r < 0 && errno != EINTR)
			usleep(1000); /* ENOMEM: breathe, then retry */
		if (r <= 0)
			continue;
		if (s->pfds[0].revents)
			break;
		/* Connections first: accept_all() may append to conns. */
		for (size_t i = 0; i < n - 2; i++) {
			struct conn *c = s->conns[i];
			short ev = s->pfds[i + 2].revents;

			if (ev & POLLOUT)
				flush_out(s, c);
			if (ev & (POLLIN | POLLHUP | POLLERR))
				for (int b = 0; b < BATCH && serve_one(s, c); b++)
					;
		}
		if (s->pfds[1].revents)
			accept_all(s);
	}
	/* Stopping: everyone goes, every share is withdrawn. */
	for (size_t i = 0; i < s->nconns; i++)
		s->conns[i]->dead = true;
	reap(s);
	for (size_t b = 0; b < BUCKETS; b++)
		while (s->buckets[b])
			drop_share(s, &s->buckets[b]);
}

void rsb_server_wake(struct rsb_server *s)
{
	ssize_t r;

	do
		r = write(s->wake[1], "x", 1);
	while (r < 0 && errno == EINTR);
}

const char *rsb_server_path(const struct rsb_server *s)
{
	return s->l.path;
}

int rsb_server_new(const struct rsb_listener *l, struct rsb_server **out)
{
	struct rsb_server *s = calloc(1, sizeof(*s));
	const char *idle = getenv("RSHARE_BROKER_IDLE_MS");

	if (!s)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a broker");
	s->wake[0] = s->wake[1] = -1;
	s->rx = malloc(RSB_MSG_MAX + 1);
	s->conns = calloc(MAX_CONNS, sizeof(*s->conns));
	s->pfds = calloc(MAX_CONNS + 2, sizeof(*s->pfds));
	if (!s->rx || !s->conns || !s->pfds || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		int err = errno;
		free(s->rx);
		free(s->conns);
		free(s->pfds);
		free(s);
		return rs_fail(err == EMFILE ? RSHARE_E_NOMEM : RSHARE_E_NOMEM, err,
			       "cannot allocate a broker");
	}
	s->idle_ms = idle && atoi(idle) > 0 ? (uint64_t)atoi(idle) : IDLE_MS_DEFAULT;
	s->l = *l;
	*out = s;
	return RSHARE_OK;
}

void rsb_server_free(struct rsb_server *s)
{
	rsb_unlisten(&s->l);
	close(s->wake[0]);
	close(s->wake[1]);
	free(s->rx);
	free(s->conns);
	free(s->pfds);
	free(s);
}
