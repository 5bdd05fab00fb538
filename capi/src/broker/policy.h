/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker's policy, apart from its connection I/O (server.c): who is at
 * the other end of a connection, who may attach to or withdraw a share,
 * and which users the broker's limits bind. server.c reads and answers;
 * every "may this peer..." is decided here, from the kernel's word on the
 * peer and nothing the peer wrote.
 */
#ifndef RSHARE_BROKER_POLICY_H
#define RSHARE_BROKER_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* Per uid, for uids other than root and the broker's (rsb_limited):
 * connections, and shares (persistent ones included). */
#define RSB_CONNS_OTHER 256
#define RSB_SHARES_OTHER 256

/* Who is at the other end of a connection, as the kernel said at connect
 * time (SO_PEERCRED, SO_PEERGROUPS): uid and gid -1, pid 0, no groups when
 * it would not say. */
struct rsb_peer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups; /* supplementary groups */
	int ngroups;
};

/* Who may attach to a share: its owner, root, and the uids and gids its
 * publisher listed. */
struct rsb_acl {
	uid_t owner_uid;
	uint32_t n_uids, n_gids;
	uint32_t uids[RSHARE_SHARE_IDS_MAX], gids[RSHARE_SHARE_IDS_MAX];
};

/* Read the peer of connected socket fd; rsb_peer_free releases it. */
void rsb_peer_read(int fd, struct rsb_peer *p);
void rsb_peer_free(struct rsb_peer *p);

/* The access list of a share that owner publishes with request r. */
void rsb_acl_init(struct rsb_acl *a, const struct rsb_peer *owner, const struct rsb_request *r);

bool rsb_may_attach(const struct rsb_acl *a, const struct rsb_peer *p);
/* Besides the connection that published it: its owner and root. */
bool rsb_may_withdraw(const struct rsb_acl *a, const struct rsb_peer *p);

/* Does the per-user limit bind p? Root and the broker's own user are
 * trusted with the broker's whole limits; others get a share of them. */
bool rsb_limited(const struct rsb_peer *p);

#endif
