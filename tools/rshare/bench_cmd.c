/*
 * rshare bench: per-operation latency of the ABI against its floor.
 *
 * Each ABI call is timed beside its floor, measured in the same run: the
 * same provider operations called directly through the provider table
 * (linked from the internal library), plus for export/import the blob
 * encoding/validation any checked blob needs. The difference is what the
 * ABI layer itself costs: handle lookup, pinning, registration, copy-out.
 * Sharing is timed as a full round trip to another process against a raw
 * SCM_RIGHTS round trip carrying the same payload.
 *
 * Calls are timed GROUP at a time with the monotonic clock; the clock's own
 * cost, measured first, is subtracted from every sample, and a sample is the
 * mean of its group.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blob.h"
#include "cli.h"
#include "provider.h"

#define PD_BATCH 400
#define PD_ROUNDS 25
#define VAR_BATCH 48
#define VAR_ROUNDS 120
#define SHARE_ROUNDS 400
/* Calls timed per clock reading: a single call of a few tens of ns is too
 * close to the clock's own cost and granularity to time alone. */
#define GROUP 8

struct series {
	uint64_t *v;
	size_t n;
};

static uint64_t clock_cost;

/* Record one sample: (t1 - t0 - clock cost) / calls. */
static void add(struct series *s, uint64_t t0, uint64_t t1, unsigned calls)
{
	uint64_t d = t1 - t0;
	s->v[s->n++] = (d > clock_cost ? d - clock_cost : 0) / calls;
}

/* Run stmt for i in [0, n), timing it GROUP calls at a time into series.
 * stmt sets `bad` to a status to stop the benchmark. */
#define TIMED(series, n, stmt)                                                \
	for (int g_ = 0; g_ < (n) && !bad; g_ += GROUP) {                     \
		uint64_t t_ = cli_now_ns();                                   \
		for (int i = g_; i < g_ + GROUP; i++) {                       \
			stmt;                                                 \
		}                                                             \
		add(&(series), t_, cli_now_ns(), GROUP);                      \
	}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(struct series *s, double p)
{
	size_t i;

	qsort(s->v, s->n, sizeof(uint64_t), cmp_u64);
	i = (size_t)(p * (double)(s->n - 1));
	return (double)s->v[i];
}

static struct series mk(size_t n)
{
	struct series s = { calloc(n, sizeof(uint64_t)), 0 };
	if (!s.v)
		exit(1);
	return s;
}

static void report(const char *what, struct series *abi, struct series *floor)
{
	double am = pct(abi, 0.5), a99 = pct(abi, 0.99);
	double fm = pct(floor, 0.5), f99 = pct(floor, 0.99);

	printf("%-26s %9.1f %9.1f   %9.1f %9.1f   ", what, am, a99, fm, f99);
	/* Below a few ns the ratio says nothing: show the difference. */
	if (fm >= 5)
		printf("%6.2fx\n", am / fm);
	else
		printf("%+5.0f ns\n", am - fm);
	free(abi->v);
	free(floor->v);
}

static void calibrate(void)
{
	struct series s = mk(100000);
	for (int i = 0; i < 100000; i++) {
		uint64_t t0 = cli_now_ns();
		add(&s, t0, cli_now_ns(), 1);
	}
	clock_cost = (uint64_t)pct(&s, 0.5);
	free(s.v);
}

/* The provider whose device the ABI opened, and a context of its own. */
static int open_floor(rshare_device *dev, struct rs_ctx *ctx)
{
	char name[RSHARE_NAME_MAX];
	size_t len;
	int provider;

	rshare_device_name(dev, name, sizeof(name), &len);
	rshare_device_provider(dev, &provider);
	ctx->ops = provider == RSHARE_PROVIDER_SIM ? &rs_sim_provider : &rs_hw_provider;
	return ctx->ops->open(name, ctx);
}

enum { OP_ALLOC, OP_EXPORT, OP_IMPORT, OP_UNIMPORT, OP_FREE, NOPS };

static void report_all(const char *kind, struct series *a, struct series *f)
{
	static const char *ops[NOPS] = { "alloc", "export", "import", "unimport", "free" };
	char what[32];

	for (int k = 0; k < NOPS; k++) {
		snprintf(what, sizeof(what), "%s %s", kind, ops[k]);
		report(what, &a[k], &f[k]);
	}
}

static int bench_pd(rshare_device *dev, struct rs_ctx *ctx)
{
	enum { N = PD_BATCH * PD_ROUNDS / GROUP };
	struct series a[NOPS], f[NOPS];
	static rshare_pd *pds[PD_BATCH], *imps[PD_BATCH];
	static struct rs_pd_info infos[PD_BATCH], iinfos[PD_BATCH];
	static uint8_t blobs[PD_BATCH][RSHARE_BLOB_MAX];
	static size_t lens[PD_BATCH];
	int bad = 0;

	for (int k = 0; k < NOPS; k++) {
		a[k] = mk(N);
		f[k] = mk(N);
	}
	for (int r = 0; r < PD_ROUNDS && !bad; r++) {
		/* Through the ABI. */
		TIMED(a[OP_ALLOC], PD_BATCH, bad = rshare_pd_alloc(dev, &pds[i]));
		TIMED(a[OP_EXPORT], PD_BATCH,
		      bad = rshare_pd_export(pds[i], blobs[i], RSHARE_BLOB_MAX, &lens[i]));
		TIMED(a[OP_IMPORT], PD_BATCH,
		      bad = rshare_pd_import(dev, blobs[i], lens[i], &imps[i]));
		TIMED(a[OP_UNIMPORT], PD_BATCH, bad = rshare_pd_unimport(imps[i]));
		TIMED(a[OP_FREE], PD_BATCH, bad = rshare_pd_free(pds[i]));
		/* The floor: the provider's calls, and the blob work any checked
		 * blob needs. */
		TIMED(f[OP_ALLOC], PD_BATCH, bad = ctx->ops->pd_alloc(ctx, &infos[i]));
		TIMED(f[OP_EXPORT], PD_BATCH, {
			struct rs_blob b;
			rs_blob_init(&b, RSHARE_KIND_PD, ctx);
			b.handle = infos[i].handle;
			b.serial = infos[i].serial;
			lens[i] = rs_blob_encode(&b, blobs[i]);
		});
		TIMED(f[OP_IMPORT], PD_BATCH, {
			struct rs_blob b;
			bad = rs_blob_decode(blobs[i], lens[i], &b);
			if (!bad)
				bad = rs_blob_check_target(&b, RSHARE_KIND_PD, ctx);
			iinfos[i].handle = b.handle;
			iinfos[i].serial = b.serial;
			if (!bad)
				bad = ctx->ops->pd_import(ctx, &iinfos[i]);
		});
		TIMED(f[OP_UNIMPORT], PD_BATCH, ctx->ops->pd_unimport(ctx, &iinfos[i]));
		TIMED(f[OP_FREE], PD_BATCH, bad = ctx->ops->pd_dealloc(ctx, &infos[i]));
	}
	if (bad)
		return cli_fail("bench: PD operations", bad);
	report_all("pd", a, f);
	return 0;
}

static int bench_var(rshare_device *dev, struct rs_ctx *ctx)
{
	enum { N = VAR_BATCH * VAR_ROUNDS / GROUP };
	struct series a[NOPS], f[NOPS];
	static rshare_var *vars[VAR_BATCH], *imps[VAR_BATCH];
	static struct rs_var_info infos[VAR_BATCH], iinfos[VAR_BATCH];
	static uint8_t blobs[VAR_BATCH][RSHARE_BLOB_MAX];
	static size_t lens[VAR_BATCH];
	int bad = 0;

	for (int k = 0; k < NOPS; k++) {
		a[k] = mk(N);
		f[k] = mk(N);
	}
	for (int r = 0; r < VAR_ROUNDS && !bad; r++) {
		TIMED(a[OP_ALLOC], VAR_BATCH, bad = rshare_var_alloc(dev, 0, &vars[i]));
		TIMED(a[OP_EXPORT], VAR_BATCH,
		      bad = rshare_var_export(vars[i], blobs[i], RSHARE_BLOB_MAX, &lens[i]));
		TIMED(a[OP_IMPORT], VAR_BATCH,
		      bad = rshare_var_import(dev, blobs[i], lens[i], &imps[i]));
		TIMED(a[OP_UNIMPORT], VAR_BATCH, bad = rshare_var_unimport(imps[i]));
		TIMED(a[OP_FREE], VAR_BATCH, bad = rshare_var_free(vars[i]));
		TIMED(f[OP_ALLOC], VAR_BATCH, bad = ctx->ops->var_alloc(ctx, 0, &infos[i]));
		TIMED(f[OP_EXPORT], VAR_BATCH, {
			struct rs_var_info info = infos[i];
			struct rs_blob b;
			bad = ctx->ops->var_export(ctx, &info);
			rs_blob_from_var(&b, ctx, &info);
			lens[i] = rs_blob_encode(&b, blobs[i]);
		});
		TIMED(f[OP_IMPORT], VAR_BATCH, {
			struct rs_blob b;
			bad = rs_blob_decode(blobs[i], lens[i], &b);
			if (!bad)
				bad = rs_blob_check_target(&b, RSHARE_KIND_VAR, ctx);
			rs_var_from_blob(&iinfos[i], &b);
			if (!bad)
				bad = ctx->ops->var_import(ctx, &iinfos[i]);
		});
		TIMED(f[OP_UNIMPORT], VAR_BATCH, ctx->ops->var_unimport(ctx, &iinfos[i]));
		TIMED(f[OP_FREE], VAR_BATCH, bad = ctx->ops->var_free(ctx, &infos[i]));
	}
	if (bad)
		return cli_fail("bench: VAR operations", bad);
	report_all("var", a, f);
	return 0;
}

/* The sharing benchmark's three ways to hand over a device and a payload,
 * measured in alternation so that all three see the same scheduler and
 * CPU state (wake-up latency on an idle machine varies a lot over time). */
enum { SHARE_RAW, SHARE_CHANNEL, SHARE_IMPORT, NSHARE };

/* The peer's side of one message. SHARE_RAW: recvmsg and close the fd.
 * SHARE_CHANNEL: rshare_channel_recv (which imports the device).
 * SHARE_IMPORT: that, plus importing and unimporting every PD blob. */
static int share_receive(int sock, int mode, uint8_t *buf, size_t cap)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	rshare_device *dev;
	size_t len = 0;

	if (mode == SHARE_RAW) {
		struct iovec iov = { buf, cap };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *cm;
		int fd;

		if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) <= 0)
			return -1;
		cm = CMSG_FIRSTHDR(&m);
		if (cm) {
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
			close(fd);
		}
		return 0;
	}
	if (rshare_channel_recv(sock, &dev, buf, cap, &len))
		return -1;
	for (size_t off = 0; mode == SHARE_IMPORT && off + 10 <= len;) {
		size_t blen = buf[off + 8] | (size_t)buf[off + 9] << 8; /* length field */
		rshare_pd *pd;
		if (rshare_pd_import(dev, buf + off, blen, &pd) == RSHARE_OK)
			rshare_pd_unimport(pd);
		off += blen;
	}
	rshare_device_close(dev);
	return 0;
}

static void share_peer(const int *socks)
{
	static uint8_t buf[RSHARE_PAYLOAD_MAX]; /* full size: no sizing peek */
	struct pollfd pfd[NSHARE];

	for (int m = 0; m < NSHARE; m++)
		pfd[m] = (struct pollfd){ .fd = socks[m], .events = POLLIN };
	while (poll(pfd, NSHARE, -1) > 0) {
		for (int m = 0; m < NSHARE; m++) {
			if (!(pfd[m].revents & (POLLIN | POLLHUP)))
				continue;
			if (share_receive(socks[m], m, buf, sizeof(buf)) < 0 ||
			    send(socks[m], "k", 1, MSG_NOSIGNAL) != 1)
				_exit(0); /* the parent hung up */
		}
	}
	_exit(0);
}

static void share_send(int sock, int mode, rshare_device *dev, int fd,
		       const uint8_t *payload, size_t len)
{
	if (mode == SHARE_RAW) {
		char ctl[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { (void *)payload, len };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		sendmsg(sock, &m, 0);
	} else {
		rshare_channel_send(sock, dev, payload, len);
	}
}

/* Round trips of one payload in the three ways, alternating; medians and
 * p99s in us into med[] and p99[]. */
static int share_rounds(rshare_device *dev, const uint8_t *payload, size_t len,
			double *med, double *p99)
{
	struct series s[NSHARE];
	int socks[NSHARE], peer[NSHARE], fd, sv[2];
	pid_t pid;
	char ack;

	rshare_device_fd(dev, &fd);
	for (int m = 0; m < NSHARE; m++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			return 1;
		socks[m] = sv[0];
		peer[m] = sv[1];
		s[m] = mk(SHARE_ROUNDS);
	}
	pid = fork();
	if (pid == 0) {
		/* Only the parent may hold its ends, or the peer never sees it
		 * hang up. */
		for (int m = 0; m < NSHARE; m++)
			close(socks[m]);
		share_peer(peer);
	}
	for (int m = 0; m < NSHARE; m++)
		close(peer[m]);
	for (int i = 0; i < SHARE_ROUNDS + 20; i++) {
		for (int m = 0; m < NSHARE; m++) {
			uint64_t t0 = cli_now_ns();
			share_send(socks[m], m, dev, fd, payload, len);
			if (recv(socks[m], &ack, 1, 0) != 1)
				return 1;
			if (i >= 20) /* after a warm-up */
				add(&s[m], t0, cli_now_ns(), 1);
		}
	}
	for (int m = 0; m < NSHARE; m++) {
		close(socks[m]);
		med[m] = pct(&s[m], 0.5) / 1000;
		p99[m] = pct(&s[m], 0.99) / 1000;
		free(s[m].v);
	}
	waitpid(pid, NULL, 0);
	return 0;
}

static int bench_share(rshare_device *dev)
{
	static uint8_t payload[RSHARE_PAYLOAD_MAX];
	static rshare_pd *pds[1000];
	static const size_t counts[2] = { 1, 1000 };
	size_t blen = 0;
	int s = 0;

	for (int i = 0; i < 1000 && !s; i++)
		s = rshare_pd_alloc(dev, &pds[i]);
	if (s)
		return cli_fail("bench: share set-up", s);
	for (int k = 0; k < 2; k++) {
		double med[NSHARE], p99[NSHARE];
		char what[64];
		size_t len = 0;

		for (size_t i = 0; i < counts[k]; i++) {
			rshare_pd_export(pds[i], payload + len, RSHARE_BLOB_MAX, &blen);
			len += blen;
		}
		if (share_rounds(dev, payload, len, med, p99)) {
			fprintf(stderr, "rshare bench: the sharing peer failed\n");
			return 1;
		}
		snprintf(what, sizeof(what), "share %zu blob%s (send+recv)", counts[k],
			 counts[k] > 1 ? "s" : "");
		printf("%-26s %9.2f %9.2f   %9.2f %9.2f   %6.2fx\n", what, med[SHARE_CHANNEL],
		       p99[SHARE_CHANNEL], med[SHARE_RAW], p99[SHARE_RAW],
		       med[SHARE_CHANNEL] / med[SHARE_RAW]);
		printf("%-26s %9.2f %9.2f   %9.2f %9.2f   %6.2fx\n", "  + import each blob",
		       med[SHARE_IMPORT], p99[SHARE_IMPORT], med[SHARE_RAW], p99[SHARE_RAW],
		       med[SHARE_IMPORT] / med[SHARE_RAW]);
	}
	for (int i = 0; i < 1000; i++)
		rshare_pd_free(pds[i]);
	return 0;
}

static int run_bench(int argc, char **argv);

const struct cli_command cli_bench = {
	.name = "bench",
	.args = "[--device NAME]",
	.summary = "per-operation latency against the provider floor",
	.options = "  -d, --device=NAME   the device to open (default: the first, else sim0)\n",
	.run = run_bench,
};

static const struct option bench_opts[] = {
	{ "device", required_argument, NULL, 'd' },
	CLI_OPT_HELP,
	{ 0 },
};

static int run_bench(int argc, char **argv)
{
	const char *device = NULL;
	rshare_device *dev;
	struct rs_ctx ctx = { .fd = -1 };
	int s, c;

	while ((c = cli_getopt(&cli_bench, argc, argv, "d:h", bench_opts)) != -1)
		if (c == 'd')
			device = optarg;
	if (optind < argc)
		cli_usage_error(&cli_bench, "unexpected argument '%s'", argv[optind]);
	if ((s = rshare_device_open(device, &dev)))
		return cli_fail("opening the device", s);
	if ((s = open_floor(dev, &ctx)))
		return cli_fail("opening the floor's own context", s);
	calibrate();
	printf("rshare %s bench on %s (clock cost %" PRIu64 " ns subtracted)\n\n",
	       rshare_version(), ctx.name, clock_cost);
	printf("%-26s %9s %9s   %9s %9s   %7s\n", "operation (ns)", "median", "p99",
	       "floor", "floor p99", "ratio");
	if (bench_pd(dev, &ctx) || bench_var(dev, &ctx))
		return 1;
	printf("\n%-26s %9s %9s   %9s %9s   %7s\n", "round trip (us)", "median", "p99",
	       "raw fd", "raw p99", "ratio");
	if (bench_share(dev))
		return 1;
	printf("\nfloor: the provider's own calls (plus blob encode/validate for export and\n"
	       "import); raw fd: sendmsg(SCM_RIGHTS) + recvmsg + close with the same payload.\n");
	ctx.ops->close(&ctx);
	if ((s = rshare_device_close(dev)))
		return cli_fail("closing the device", s);
	return 0;
}
