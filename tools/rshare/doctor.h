/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What `rshare devices --verbose` and `rshare selftest` report about the
 * rdma-core in this process: the libraries librshare loaded (their paths,
 * from /proc/self/maps) and which symbol version nodes they resolve, and,
 * per device, why a capability is off and which checking level a context
 * has. Read from outside the library, as any user could: the ABI stays as
 * it is.
 */
#ifndef RSHARE_CLI_DOCTOR_H
#define RSHARE_CLI_DOCTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A version node rshare uses, what needs it, and whether it resolved. */
struct doctor_node {
	const char *lib;    /* "libibverbs" or "libmlx5" */
	const char *node;   /* "IBVERBS_1.10" */
	const char *symbol; /* one symbol of that node rshare resolves */
	const char *gives;  /* what it is needed for */
	bool resolved;
};

struct doctor {
	char verbs_path[512]; /* "" when not loaded */
	char mlx5_path[512];
	struct doctor_node *nodes;
	size_t nnodes;
};

/* Fill d (after the library has listed devices, which loads rdma-core). */
void doctor_probe(struct doctor *d);
/* Did node resolve? */
bool doctor_has(const struct doctor *d, const char *node);

/* Why capability bit `cap` is off on a device with caps (provider as
 * rshare_devices_get gives it), or NULL when it is on. */
const char *doctor_why_off(const struct doctor *d, int provider, uint32_t caps, uint32_t cap);
/* The checking level of a context with caps: "table" (sim0), "ledger",
 * "bare" (docs/hardware.md, "Checking levels"). */
const char *doctor_level(int provider, uint32_t caps);

#endif
