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
 * valid publish keeps it, never on this thread (a close can block for as
 * long as the file's other side likes: util/closer.c). Replies are sent
 * without blocking; a client that does not read them is dropped. Only list
 * replies, which can be long, go out as the socket drains, each chunk made
 * when it can be sent (flush_list).
 *
 * Shares live in a hash table by name. A share remembers the connection
 * that published it; when that connection ends (the publisher exited or was
 * killed: the kernel closes its socket and poll() reports it at once) its
 * shares are withdrawn, except persistent ones.
 *
 * Who may do what (the peer's credentials, attach and withdraw rights, the
 * per-user limits) is policy.c's to decide; this file asks it.
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
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "policy.h"
#include "proto.h"
#include "rshare/rshare.h"
#include "util/error.h"
#include "util/fdutil.h"
#include "util/le.h"
#include "util/memfd.h"

#define BUCKETS 1024
#define MAX_CONNS 4096     /* at most; fewer when the fd limit is lower (conn_limit) */
#define FD_RESERVE 64      /* fds kept for everything but connections */
#define MAX_SHARES 65536
#define MAX_PAYLOAD_BYTES (256u << 20) /* all shares' payloads together */
#define MAX_FDS RS_SCM_MAX_FD /* room for every fd a request can carry */
#define CLOSER_PAUSE_MS 10 /* the closer's queue short: how long reading rests */
#define BATCH 16           /* requests served per connection per wake-up */
#define IDLE_MS_DEFAULT 10000
#define ACCEPT_PAUSE_MS 100 /* out of fds: how long the listener rests */

struct share {
	struct share *next;      /* hash chain */
	char name[RSHARE_SHARE_NAME_MAX + 1];
	rshare_device *dev;      /* the broker's reference to the context */
	int dev_fds[2]; /* the device's command fd and its ledger's (rs_ctx_fds) */
	int ndev_fds;
	int fds[RSHARE_CHANNEL_FDS_MAX]; /* extra fds (sealed memfds: buffers), since 1.2 */
	int nfds;
	uint8_t *payload;
	uint32_t len;
	char blobs[96];          /* JSON: the payload's blob kinds, or null */
	struct rsb_acl acl;      /* its owner and who else may attach */
	pid_t owner_pid;
	bool persistent;
	uint64_t attaches;
	time_t created;
	struct conn *publisher;  /* NULL once a persistent share's publisher left */
};

struct conn {
	int fd;
	bool dead;
	struct rsb_peer peer;    /* who is at the other end (policy.c) */
	int nshares;             /* shares this connection published */
	uint64_t idle_deadline;  /* ms; 0 while it publishes or waits */
	bool waiting;            /* an attach waits for its name */
	uint64_t wait_deadline;  /* ms; UINT64_MAX: no limit */
	uint64_t wait_since;     /* ms; when the wait began */
	uint32_t wait_cap;
	bool wait_fds;           /* the waiting attach takes extra fds (RSB_FLAG_FDS) */
	char wait_name[RSHARE_SHARE_NAME_MAX + 1];
	bool listing;            /* a list reply is being sent, from list_after on */
	bool list_started;       /* its first chunk (the '[') went */
	char list_after[RSHARE_SHARE_NAME_MAX + 1]; /* the last name sent */
};

struct rsb_server {
	struct rsb_listener l;
	int wake[2];
	struct conn **conns;
	size_t nconns;
	struct share *buckets[BUCKETS];
	struct share **sorted;   /* every share by name: lists are made from it */
	size_t max_conns;        /* conn_limit() */
	size_t nshares;
	size_t payload_bytes;    /* held by all shares, at most MAX_PAYLOAD_BYTES */
	uint64_t idle_ms;
	uint64_t accept_after;   /* ms; the listener is not polled before */
	uint8_t *rx;             /* one request, RSB_MSG_MAX + 1 bytes */
	uint8_t chunk[RSB_HDR + RSB_CHUNK]; /* the list chunk being sent */
	struct pollfd *pfds;
};

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

/* The index in s->sorted of the first share whose name is after name
 * (or equal to it, if equal is set). */
static size_t sorted_from(const struct rsb_server *s, const char *name, bool equal)
{
	size_t lo = 0, hi = s->nshares;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->sorted[mid]->name, name);
		if (c < 0 || (c == 0 && !equal))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void drop_share(struct rsb_server *s, struct share **p)
{
	struct share *sh = *p;
	size_t i = sorted_from(s, sh->name, true);

	memmove(&s->sorted[i], &s->sorted[i + 1], (s->nshares - i - 1) * sizeof(*s->sorted));
	*p = sh->next;
	if (sh->publisher)
		sh->publisher->nshares--;
	rshare_device_close(sh->dev);
	for (int k = 0; k < sh->nfds; k++)
		rs_close_untrusted(sh->fds[k]); /* another process's files: off this thread */
	s->payload_bytes -= sh->len;
	free(sh->payload);
	free(sh);
	s->nshares--;
}

/* ---- replies ---- */

/* Send one reply message now, with nfds fds (0, or a device's 1 or 2 then
 * a share's extra fds) attached. A client whose socket is full is not
 * reading its replies: it is dropped. */
static void send_msg(struct conn *c, uint8_t type, uint8_t flags, int32_t status,
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

/* A failure reply: status and its message, the text the client reports. */
static void send_error(struct conn *c, uint8_t type, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void send_error(struct conn *c, uint8_t type, int status, const char *fmt, ...)
{
	char text[RSB_TEXT_MAX + 1];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	send_msg(c, type | RSB_REPLY, 0, status, text,
		 (size_t)n < RSB_TEXT_MAX ? (size_t)n : RSB_TEXT_MAX, NULL, 0);
}

/* Hand sh to the attacher c (with_fds: it takes extra fds), or say why not. */
static void serve_attach(struct share *sh, struct conn *c, uint32_t cap, bool with_fds)
{
	int fds[2 + RSHARE_CHANNEL_FDS_MAX];
	uint8_t need[4];

	c->waiting = false;
	if (!rsb_may_attach(&sh->acl, &c->peer)) {
		logf_("refused attach to \"%s\" (owner uid %u) by uid %u gid %u pid %d: "
		      "not the owner, not root, not listed",
		      sh->name, (unsigned)sh->acl.owner_uid, (unsigned)c->peer.uid,
		      (unsigned)c->peer.gid, (int)c->peer.pid);
		send_error(c, RSB_ATTACH, RSHARE_E_PERM,
			   "uid %u may not attach to share \"%s\" (owner uid %u; not listed)",
			   (unsigned)c->peer.uid, sh->name, (unsigned)sh->acl.owner_uid);
		return;
	}
	if (sh->len > cap) {
		rs_put32(need, sh->len);
		send_msg(c, RSB_ATTACH | RSB_REPLY, 0, RSHARE_E_NOSPACE, need, 4, NULL, 0);
		return;
	}
	if (sh->nfds && !with_fds) {
		send_error(c, RSB_ATTACH, RSHARE_E_PROTOCOL,
			   "share \"%s\" carries %d fd(s) besides the device "
			   "(a buffer's memory): attach with rshare_broker_attachv (or, from "
			   "an event loop, rshare_broker_attach_startv)", sh->name,
			   sh->nfds);
		return;
	}
	/* The device's fds (RSB_FLAG_LEDGER: two), then the extra fds. */
	memcpy(fds, sh->dev_fds, (size_t)sh->ndev_fds * sizeof(int));
	memcpy(fds + sh->ndev_fds, sh->fds, (size_t)sh->nfds * sizeof(int));
	send_msg(c, RSB_ATTACH | RSB_REPLY, sh->ndev_fds == 2 ? RSB_FLAG_LEDGER : 0, RSHARE_OK,
		 sh->payload, sh->len, fds, sh->ndev_fds + sh->nfds);
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

/* The shares uid owns (for its limit, rsb_limited). */
static int shares_of(const struct rsb_server *s, uid_t uid)
{
	int n = 0;

	for (size_t b = 0; b < BUCKETS; b++)
		for (const struct share *sh = s->buckets[b]; sh; sh = sh->next)
			n += sh->acl.owner_uid == uid;
	return n;
}

static void do_publish(struct rsb_server *s, struct conn *c, const struct rsb_request *r,
		       int *fds, int nfds)
{
	struct share **slot = find_slot(s, r->name), *sh;
	rshare_device *dev;
	int status, ndev;

	/* The publish announces how many of its fds are extra (the last
	 * ones); the device's are the rest: 1 or 2 (command fd, ledger). */
	ndev = nfds - (int)r->n_extra;
	if (ndev != 1 && ndev != 2) {
		send_error(c, RSB_PUBLISH, RSHARE_E_PROTOCOL,
			   "publish carried %d fds with %u extra, so %d for the device: "
			   "1 or 2 (device, ledger) expected", nfds, r->n_extra, ndev);
		c->dead = true;
		return;
	}
	/* Extra fds are buffers' memory: sealed memfds, nothing else (no
	 * socket or pipe is kept and handed out). */
	for (int i = ndev; i < nfds; i++) {
		status = rs_memfd_sealed(fds[i], NULL);
		if (status) {
			rs_fail_context(status, "publish: extra fd %d", i - ndev);
			send_error(c, RSB_PUBLISH, status, "%s", rs_last_error());
			return;
		}
	}
	if (*slot) {
		send_error(c, RSB_PUBLISH, RSHARE_E_BUSY,
			   "share \"%s\" is already published by uid %u pid %d", r->name,
			   (unsigned)(*slot)->acl.owner_uid, (int)(*slot)->owner_pid);
		return;
	}
	if (rsb_limited(&c->peer) && shares_of(s, c->peer.uid) >= RSB_SHARES_OTHER) {
		send_error(c, RSB_PUBLISH, RSHARE_E_BUSY, "uid %u holds %d shares, its limit",
			   (unsigned)c->peer.uid, RSB_SHARES_OTHER);
		return;
	}
	if (s->nshares >= MAX_SHARES ||
	    s->payload_bytes + r->payload_len > MAX_PAYLOAD_BYTES) {
		send_error(c, RSB_PUBLISH, RSHARE_E_NOMEM,
			   "the broker holds %zu shares of %zu payload bytes "
			   "(limits: %d shares, %u bytes)", s->nshares, s->payload_bytes, MAX_SHARES,
			   MAX_PAYLOAD_BYTES);
		return;
	}
	sh = calloc(1, sizeof(*sh));
	if (sh && r->payload_len)
		sh->payload = malloc(r->payload_len);
	if (!sh || (r->payload_len && !sh->payload)) {
		if (sh)
			free(sh);
		send_error(c, RSB_PUBLISH, RSHARE_E_NOMEM, "broker out of memory");
		return;
	}
	/* Validates the fd: a device context the library can import. */
	status = rs_device_adopt_received(fds[0], ndev == 2 ? fds[1] : -1, (void **)&dev);
	fds[0] = fds[ndev - 1] = -1; /* taken, even on failure */
	if (status) {
		free(sh->payload);
		free(sh);
		/* Whatever the provider said, for the publisher it is NODEV (the
		 * broker refused the device), as documented. */
		send_error(c, RSB_PUBLISH, status == RSHARE_E_NOMEM ? status : RSHARE_E_NODEV, "%s",
			   rs_last_error()); /* adopt's cause */
		return;
	}
	{
		/* The fds stay valid while the broker holds the device. */
		struct rs_slot *ds;

		if (rs_pin(dev, RS_OBJ_DEVICE, &ds) == RSHARE_OK) {
			sh->ndev_fds = rs_ctx_fds(&ds->u.dev->ctx, sh->dev_fds);
			rs_unpin(ds);
		}
	}
	sh->dev = dev;
	for (int i = ndev; i < nfds; i++) { /* taken */
		sh->fds[sh->nfds++] = fds[i];
		fds[i] = -1;
	}
	memcpy(sh->name, r->name, sizeof(sh->name));
	if (r->payload_len)
		memcpy(sh->payload, r->payload, r->payload_len);
	sh->len = r->payload_len;
	rsb_acl_init(&sh->acl, &c->peer, r);
	sh->owner_pid = c->peer.pid;
	sh->persistent = r->flags & RSB_PUB_PERSISTENT;
	sh->created = time(NULL);
	sh->publisher = c;
	describe_blobs(sh);
	*slot = sh;
	{
		size_t i = sorted_from(s, sh->name, true);
		memmove(&s->sorted[i + 1], &s->sorted[i], (s->nshares - i) * sizeof(*s->sorted));
		s->sorted[i] = sh;
	}
	s->nshares++;
	s->payload_bytes += sh->len;
	c->nshares++;
	send_msg(c, RSB_PUBLISH | RSB_REPLY, 0, RSHARE_OK, NULL, 0, NULL, 0);
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
		send_error(c, RSB_ATTACH, RSHARE_E_NOT_FOUND, "no share named \"%s\"", r->name);
		return;
	}
	c->waiting = true;
	c->wait_cap = r->cap;
	c->wait_fds = r->hflags & RSB_FLAG_FDS;
	c->wait_since = rsb_now_ms();
	c->wait_deadline = r->timeout_ms == RSB_WAIT_FOREVER ? UINT64_MAX
							     : rsb_now_ms() + r->timeout_ms;
	memcpy(c->wait_name, r->name, sizeof(c->wait_name));
}

static void do_withdraw(struct rsb_server *s, struct conn *c, const struct rsb_request *r)
{
	struct share **slot = find_slot(s, r->name), *sh = *slot;

	if (!sh || ((r->flags & RSB_WD_OWN) && sh->publisher != c)) {
		send_error(c, RSB_WITHDRAW, RSHARE_E_NOT_FOUND, "no share named \"%s\"%s", r->name,
			   (r->flags & RSB_WD_OWN) ? " published by this connection" : "");
		return;
	}
	if (sh->publisher != c && !rsb_may_withdraw(&sh->acl, &c->peer)) {
		logf_("refused withdrawal of \"%s\" (owner uid %u) by uid %u pid %d", sh->name,
		      (unsigned)sh->acl.owner_uid, (unsigned)c->peer.uid, (int)c->peer.pid);
		send_error(c, RSB_WITHDRAW, RSHARE_E_PERM,
			   "uid %u may not withdraw share \"%s\" (owner uid %u)",
			   (unsigned)c->peer.uid, sh->name, (unsigned)sh->acl.owner_uid);
		return;
	}
	drop_share(s, slot);
	send_msg(c, RSB_WITHDRAW | RSB_REPLY, 0, RSHARE_OK, NULL, 0, NULL, 0);
}

/* A list is sent in chunks made when the socket takes them, from the
 * sorted index and the last name sent: a pending list costs the broker one
 * name, whatever the number of shares or of clients not reading theirs
 * (issue 18, item 4). Shares published or withdrawn meanwhile appear or
 * not; the names stay sorted and unique. Each chunk but the last holds
 * whole entries up to RSB_CHUNK bytes (an entry is under 1 KiB). */
static size_t list_entry(char *out, size_t room, const struct share *sh, bool first)
{
	int n = snprintf(out, room,
			 "%s{\"name\":\"%s\",\"owner_uid\":%u,\"owner_pid\":%d,\"persistent\":%s,"
			 "\"payload_size\":%u,\"blobs\":%s,\"attaches\":%llu,\"created\":%lld}",
			 first ? "" : ",", sh->name, (unsigned)sh->acl.owner_uid, (int)sh->owner_pid,
			 sh->persistent ? "true" : "false", sh->len, sh->blobs,
			 (unsigned long long)sh->attaches, (long long)sh->created);

	return n < 0 || (size_t)n >= room ? 0 : (size_t)n;
}

/* Send list chunks while the socket takes them; a client that reads none
 * for the idle time is dropped (expire()). */
static void flush_list(struct rsb_server *s, struct conn *c)
{
	while (c->listing && !c->dead) {
		char *body = (char *)s->chunk + RSB_HDR;
		size_t len = 0, i = c->list_started ? sorted_from(s, c->list_after, false) : 0;
		const char *last = NULL;
		bool first = !c->list_started, end;
		ssize_t r;

		if (first)
			body[len++] = '[';
		for (; i < s->nshares; i++) {
			/* Room kept for the closing ']'. */
			size_t k = list_entry(body + len, RSB_CHUNK - 1 - len, s->sorted[i],
					      first && !last);
			if (!k)
				break;
			len += k;
			last = s->sorted[i]->name;
		}
		end = i == s->nshares;
		if (end)
			body[len++] = ']';
		rsb_put_header(s->chunk, RSB_LIST | RSB_REPLY, end ? 0 : RSB_FLAG_MORE,
			       (uint32_t)len, RSHARE_OK);
		do
			r = send(c->fd, s->chunk, RSB_HDR + len, MSG_DONTWAIT | MSG_NOSIGNAL);
		while (r < 0 && errno == EINTR);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* poll for POLLOUT; made again from the same place */
		if (r < 0) {
			c->dead = true;
			return;
		}
		c->list_started = true;
		if (last)
			memcpy(c->list_after, last, strlen(last) + 1);
		c->idle_deadline = rsb_now_ms() + s->idle_ms;
		c->listing = !end;
	}
}

static void do_list(struct rsb_server *s, struct conn *c)
{
	c->listing = true;
	c->list_started = false;
	flush_list(s, c);
}

static int by_wait_name(const void *a, const void *b)
{
	return strcmp((*(struct conn *const *)a)->wait_name, (*(struct conn *const *)b)->wait_name);
}

/* The attaches waiting for a name, sorted by it, as a JSON array sent in
 * RSB_CHUNK pieces at once (a few dozen bytes per waiter: a client whose
 * socket cannot take it all is not reading, and is dropped as send_msg()
 * drops any). A connection that ended (cancelled, exited) is not waiting,
 * even before this loop has seen its end: the hang-up may have come after
 * this poll() round began, so each waiting connection is looked at now
 * (one poll() without waiting). */
static void do_waiting(struct rsb_server *s, struct conn *c)
{
	enum { ENTRY_MAX = RSHARE_SHARE_NAME_MAX + 80 }; /* one {...}, and a comma */
	size_t slots = s->nconns ? s->nconns : 1, n = 0, live = 0, len = 1;
	struct conn **all = malloc(slots * sizeof(*all));
	struct pollfd *p = malloc(slots * sizeof(*p));
	char *buf = malloc(slots * ENTRY_MAX + 2);
	uint64_t now = rsb_now_ms();

	if (!all || !p || !buf) {
		free(all);
		free(p);
		free(buf);
		send_error(c, RSB_WAITING, RSHARE_E_NOMEM,
			   "broker out of memory listing waiting attaches");
		return;
	}
	for (size_t i = 0; i < s->nconns; i++)
		if (s->conns[i]->waiting && !s->conns[i]->dead) {
			p[n] = (struct pollfd){ .fd = s->conns[i]->fd, .events = POLLIN };
			all[n++] = s->conns[i];
		}
	if (n && poll(p, n, 0) < 0)
		for (size_t i = 0; i < n; i++)
			p[i].revents = 0; /* cannot look: list them all */
	for (size_t i = 0; i < n; i++)
		if (!(p[i].revents & (POLLHUP | POLLERR)))
			all[live++] = all[i];
	qsort(all, live, sizeof(*all), by_wait_name);
	buf[0] = '[';
	for (size_t i = 0; i < live; i++)
		len += (size_t)snprintf(buf + len, ENTRY_MAX,
					"%s{\"name\":\"%s\",\"uid\":%u,\"pid\":%d,\"waited_ms\":%llu}",
					i ? "," : "", all[i]->wait_name, (unsigned)all[i]->peer.uid,
					(int)all[i]->peer.pid,
					(unsigned long long)(now - all[i]->wait_since));
	buf[len++] = ']';
	for (size_t off = 0; off < len && !c->dead; off += RSB_CHUNK) {
		size_t piece = len - off > RSB_CHUNK ? RSB_CHUNK : len - off;

		send_msg(c, RSB_WAITING | RSB_REPLY, off + piece < len ? RSB_FLAG_MORE : 0,
			 RSHARE_OK, buf + off, piece, NULL, 0);
	}
	free(all);
	free(p);
	free(buf);
}

/* Has c not yet read a reply we sent? (SIOCOUTQ: bytes of ours still in
 * its queue.) One request at a time means a client reads each reply before
 * it sends the next request; one that pipelines requests without reading
 * would otherwise make us pin an fd in flight per attach, charged to the
 * broker's user by the kernel (issue 18, item 3). So a connection holds at
 * most one unread reply with an fd. */
static bool unread_reply(const struct conn *c)
{
	int queued = 0;

	return ioctl(c->fd, SIOCOUTQ, &queued) == 0 && queued > 0;
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

	/* Every fd a request carries is closed off this thread: no room for
	 * a whole message's worth, no reading (rsb_server_run rests). */
	if (rs_closer_room() < MAX_FDS + 1)
		return false;
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
		rs_close_untrusted_all(fds, nfds);
		c->dead = true;
		return false;
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		status = rs_fail(RSHARE_E_PROTOCOL, 0, "request too long (%s)",
				 (msg.msg_flags & MSG_TRUNC) ? "over the largest message"
							      : "too many fds");
	else if (c->waiting || c->listing || unread_reply(c))
		status = rs_fail(RSHARE_E_PROTOCOL, 0,
				 "a new request before the reply to the last one %s",
				 c->waiting || c->listing ? "was sent" : "was read");
	else
		status = rsb_parse_request(s->rx, (size_t)r, &req);
	c->idle_deadline = rsb_now_ms() + s->idle_ms;
	if (status) {
		uint8_t type = r >= 7 ? s->rx[6] & (uint8_t)~RSB_REPLY : 0;
		send_error(c, type, status == RSHARE_E_INVAL ? RSHARE_E_INVAL : RSHARE_E_PROTOCOL,
			   "%s", rs_last_error()); /* the cause recorded above or by the parser */
		c->dead = true;
	} else if (req.type == RSB_PUBLISH) {
		do_publish(s, c, &req, fds, nfds);
	} else if (nfds) {
		send_error(c, req.type, RSHARE_E_PROTOCOL, "request carried %d unexpected fds", nfds);
		c->dead = true;
	} else if (req.type == RSB_ATTACH) {
		do_attach(s, c, &req);
	} else if (req.type == RSB_WITHDRAW) {
		do_withdraw(s, c, &req);
	} else if (req.type == RSB_WAITING) {
		do_waiting(s, c);
	} else {
		do_list(s, c);
	}
	for (int i = 0; i < nfds; i++)
		rs_close_untrusted(fds[i]); /* -1: kept by a publish */
	return !c->dead;
}

/* ---- connections ---- */

/* Does c's user hold more connections than its limit (rsb_limited)? */
static bool over_quota(const struct rsb_server *s, const struct conn *c)
{
	int n = 0;

	if (!rsb_limited(&c->peer))
		return false;
	for (size_t i = 0; i < s->nconns; i++)
		n += s->conns[i]->peer.uid == c->peer.uid && !s->conns[i]->dead;
	return n > RSB_CONNS_OTHER;
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
				s->accept_after = rsb_now_ms() + ACCEPT_PAUSE_MS;
			return;
		}
		if (s->nconns >= s->max_conns || !(c = calloc(1, sizeof(*c)))) {
			rs_close_socket_untrusted(fd);
			continue;
		}
		c->fd = fd;
		rsb_peer_read(fd, &c->peer);
		c->idle_deadline = rsb_now_ms() + s->idle_ms;
		s->conns[s->nconns++] = c;
		if (over_quota(s, c)) {
			send_error(c, 0, RSHARE_E_BUSY,
				   "uid %u holds %d connections to the broker, its limit",
				   (unsigned)c->peer.uid, RSB_CONNS_OTHER);
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
	/* What it sent and we did not read (fds among it) is received and
	 * closed off this thread first: nothing is released here, and the
	 * client is not reset before it reads our last reply. */
	rs_close_socket_untrusted(c->fd);
	rsb_peer_free(&c->peer);
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
				send_error(c, RSB_ATTACH, RSHARE_E_NOT_FOUND,
					   "no share named \"%s\" appeared in time", c->wait_name);
				c->idle_deadline = now + s->idle_ms;
			} else if (c->wait_deadline < *next) {
				*next = c->wait_deadline;
			}
		}
		if (c->listing) {
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
			send_error(c, 0, RSHARE_E_PROTOCOL, "no request within %llu ms",
				   (unsigned long long)s->idle_ms);
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
		uint64_t now = rsb_now_ms(), next;
		size_t n = 2;
		int timeout, r;

		expire(s, now, &next);
		reap(s);
		if (rs_closer_room() < MAX_FDS + 1) {
			/* The closer is behind (stuck closes): read nothing that
			 * could bring more fds until it catches up. */
			struct pollfd w = { .fd = s->wake[0], .events = POLLIN };
			if (poll(&w, 1, CLOSER_PAUSE_MS) > 0)
				break;
			continue;
		}
		if (now < s->accept_after && s->accept_after < next)
			next = s->accept_after;
		timeout = next == UINT64_MAX ? -1 : next - now > INT_MAX ? INT_MAX : (int)(next - now);
		s->pfds[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		s->pfds[1] = (struct pollfd){ .fd = s->nconns < s->max_conns &&
							  now >= s->accept_after ? s->l.fd : -1,
					      .events = POLLIN };
		for (size_t i = 0; i < s->nconns; i++)
			s->pfds[n++] = (struct pollfd){ .fd = s->conns[i]->fd,
							.events = s->conns[i]->listing ? POLLIN | POLLOUT
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
				flush_list(s, c);
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

/* The connection limit is the one that binds, not the fd limit (issue 18,
 * item 9): the soft RLIMIT_NOFILE is raised to the hard one (the broker
 * uses poll(), never select(), so fds past 1024 are fine), and at most
 * half of what it allows, less FD_RESERVE, goes to connections; the rest
 * holds shares' device fds and the closer's queue. */
static size_t conn_limit(void)
{
	struct rlimit rl;
	size_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return MAX_CONNS;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 2 * MAX_CONNS + FD_RESERVE)
		return MAX_CONNS;
	n = rl.rlim_cur > 2 * FD_RESERVE ? (size_t)(rl.rlim_cur - FD_RESERVE) / 2 : FD_RESERVE / 2;
	return n;
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
	s->sorted = calloc(MAX_SHARES, sizeof(*s->sorted));
	if (!s->rx || !s->conns || !s->pfds || !s->sorted || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		int err = errno;
		free(s->rx);
		free(s->conns);
		free(s->pfds);
		free(s->sorted);
		free(s);
		return rs_fail(err == EMFILE ? RSHARE_E_NOMEM : RSHARE_E_NOMEM, err,
			       "cannot allocate a broker");
	}
	s->idle_ms = idle && atoi(idle) > 0 ? (uint64_t)atoi(idle) : IDLE_MS_DEFAULT;
	s->max_conns = conn_limit();
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
	free(s->sorted);
	free(s);
}
