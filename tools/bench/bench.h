/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare-bench: the benchmark program, kept apart from the `rshare` command
 * so that the command links only the public library. The bench also links
 * the internal provider library, to time each operation's floor (the same
 * provider calls made directly, without the ABI layer) in the same run.
 *
 * A benchmark is a table of rows (bench_rows.c). A row names a runner and
 * its argument; the runner measures the row's subject and its floor and
 * fills a bench_result. Adding a row is adding one table entry.
 */
#ifndef RSHARE_BENCH_H
#define RSHARE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"
#include "rshare/rshare.h"

/* What every runner gets. */
struct bench_env {
	rshare_device *dev;  /* opened through the ABI */
	struct rs_ctx *ctx;  /* the same device opened directly (the floor) */
	const char *self;    /* path to this program, for exec'd peers */
	int scale;           /* 1 for a full run; larger divides the sample counts */
};

/* A row's numbers, in the unit of its section. A floor below 0 means the
 * row has none. */
struct bench_result {
	double med, p99;
	double floor_med, floor_p99;
	uint64_t pinned, floor_pinned; /* bytes registered (pinned on hardware); 0: not measured */
};

struct bench_row {
	const char *section; /* "op" (ns) or "share" (us) */
	const char *name;
	int (*run)(const struct bench_env *env, const void *arg, struct bench_result *r);
	const void *arg;
	double aim;          /* highest acceptable ratio to the floor; 0 = none */
	const char *why;     /* what the ratio is made of, printed when the aim is missed */
};

extern const struct bench_row bench_rows[];
extern const size_t bench_nrows;

/* --- measuring (bench_stats.c) --- */

struct series {
	uint64_t *v;
	size_t n, cap;
};

/* Calls timed per clock reading: one call of a few tens of ns is too close
 * to the clock's own cost and granularity to time alone. */
#define BENCH_GROUP 8

uint64_t bench_now_ns(void);
/* Measure the clock's own cost (subtracted from every sample). */
void bench_calibrate(void);
uint64_t bench_clock_cost(void);
struct series series_new(size_t cap);
void series_free(struct series *s);
/* Record one sample: (t1 - t0 - clock cost) / calls. */
void series_add(struct series *s, uint64_t t0, uint64_t t1, unsigned calls);
/* The p-quantile (0..1) of the samples (sorts them). */
double series_pct(struct series *s, double p);

/* Report a failed step: the public library's message for ABI calls, the
 * internal copy's (the bench links its own) for direct provider calls.
 * Returns -1. */
int bench_fail(const char *what, int status, bool direct);

/* --- runners --- */

/* bench_ops.c: arg is a struct op_spec. */
enum op_kind { OPK_PD, OPK_VAR, OPK_MR, OPK_DM, OPK_BUF };
enum op_which { OP_ALLOC, OP_EXPORT, OP_IMPORT, OP_UNIMPORT, OP_FREE, OP_IMPORT_UNIMPORT };
struct op_spec {
	enum op_kind kind;
	enum op_which op;
};
int bench_op(const struct bench_env *env, const void *arg, struct bench_result *r);

/* bench_sim.c: sim0's table lock beside a robust mutex (no arg), and a
 * free+alloc pair with 100,000 live objects beside 10 (arg: a bool, true
 * for a PD in the middle, false at the top). */
int bench_sim_lock(const struct bench_env *env, const void *arg, struct bench_result *r);
int bench_sim_live(const struct bench_env *env, const void *arg, struct bench_result *r);

/* bench_share.c: arg is a struct share_spec. */
enum share_mode { SHARE_RAW, SHARE_CHANNEL, SHARE_IMPORT };
struct share_spec {
	enum share_mode mode; /* SHARE_CHANNEL or SHARE_IMPORT; raw is the floor */
	unsigned nblobs;      /* PD blobs in the payload */
	bool fresh;           /* a new peer process for every sample */
};
int bench_share(const struct bench_env *env, const void *arg, struct bench_result *r);
/* Free the PDs the sharing payloads were exported from. */
void bench_share_release(void);
/* The raw floor's send: payload and fd (SCM_RIGHTS) in one sendmsg; 0 or -1. */
int bench_send_fd(int sock, int fd, const uint8_t *payload, size_t len);
/* The peer side, when exec'd as `rshare-bench __peer MODE FD`. */
int bench_share_peer(int argc, char **argv);

/* bench_bufshare.c: one 64 MiB buffer shared with 8 forked workers against
 * 8 private registrations of 64 MiB (the floor column), time and pinned
 * bytes (no arg). */
int bench_buf_share(const struct bench_env *env, const void *arg, struct bench_result *r);

/* bench_broker.c: attach by name through a broker in another process
 * against the raw fd round trip to that process (no arg). */
int bench_broker(const struct bench_env *env, const void *arg, struct bench_result *r);
/* The peer side, when exec'd as `rshare-bench __broker-peer EP DEVICE`. */
int bench_broker_peer(int argc, char **argv);

#endif
