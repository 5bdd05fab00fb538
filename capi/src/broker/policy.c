/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker's policy (policy.h): the peer's credentials from the kernel,
 * the attach and withdraw rules, whom the per-user limits bind.
 */
#include "policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void rsb_peer_read(int fd, struct rsb_peer *p)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);

	memset(p, 0, sizeof(*p));
	p->uid = (uid_t)-1;
	p->gid = (gid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) == 0) {
		p->uid = cr.uid;
		p->gid = cr.gid;
		p->pid = cr.pid;
	}
	/* The peer's supplementary groups as they were at connect time. */
	n = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &n) < 0 && errno == ERANGE && n) {
		p->groups = malloc(n);
		if (p->groups && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &n) == 0)
			p->ngroups = (int)(n / sizeof(gid_t));
	}
}

void rsb_peer_free(struct rsb_peer *p)
{
	free(p->groups);
	p->groups = NULL;
	p->ngroups = 0;
}

void rsb_acl_init(struct rsb_acl *a, const struct rsb_peer *owner, const struct rsb_request *r)
{
	a->owner_uid = owner->uid;
	a->n_uids = r->n_uids;
	a->n_gids = r->n_gids;
	memcpy(a->uids, r->uids, sizeof(a->uids));
	memcpy(a->gids, r->gids, sizeof(a->gids));
}

bool rsb_may_attach(const struct rsb_acl *a, const struct rsb_peer *p)
{
	if (p->uid == 0 || p->uid == a->owner_uid)
		return true;
	for (uint32_t i = 0; i < a->n_uids; i++)
		if (a->uids[i] == p->uid)
			return true;
	for (uint32_t i = 0; i < a->n_gids; i++) {
		if (a->gids[i] == p->gid)
			return true;
		for (int g = 0; g < p->ngroups; g++)
			if (a->gids[i] == p->groups[g])
				return true;
	}
	return false;
}

bool rsb_may_withdraw(const struct rsb_acl *a, const struct rsb_peer *p)
{
	return p->uid == 0 || p->uid == a->owner_uid;
}

/* Persistent shares outlive their publisher, and waiting attachers are
 * never timed out: without a per-user limit one user could fill the
 * broker's fds, or its connection table, for good. */
bool rsb_limited(const struct rsb_peer *p)
{
	return p->uid != 0 && p->uid != geteuid();
}
