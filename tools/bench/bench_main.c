/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare-bench [--device NAME] [--json] [--quick] [--row TEXT]
 *
 * Runs every row of the table (bench_rows.c) and prints, per row, the
 * median and p99 of the measured call, the same for its floor, their ratio
 * and, for rows with an aim, whether the ratio meets it and by how much it
 * misses. --json prints the same as one JSON object; --quick divides the
 * sample counts by 10 (for tests); --row runs only rows whose name
 * contains TEXT.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

struct section {
	const char *id, *title, *unit, *floor_title;
};

static const struct section sections[] = {
	{ "op", "operation (ns)", "ns", "floor" },
	{ "share", "round trip (us)", "us", "raw fd" },
	{ "memory", "shared buffer (us)", "us", "private" },
};

static const char usage[] =
	"usage: rshare-bench [--device NAME] [--json] [--quick] [--row TEXT]\n"
	"\n"
	"  --device NAME  the device to measure (default: the first, else sim0)\n"
	"  --json         print the results as one JSON object\n"
	"  --quick        a tenth of the samples (a smoke run, not for numbers)\n"
	"  --row TEXT     only the rows whose name contains TEXT\n";

/* The provider of the ABI's device, and a context of its own for the floor. */
static int open_floor(rshare_device *dev, struct rs_ctx *ctx)
{
	char name[RSHARE_NAME_MAX];
	size_t len;
	int provider, s;

	if ((s = rshare_device_name(dev, name, sizeof(name), &len)) ||
	    (s = rshare_device_provider(dev, &provider)))
		return bench_fail("the device's name", s, false);
	ctx->ops = provider == RSHARE_PROVIDER_SIM ? &rs_sim_provider : &rs_hw_provider;
	if ((s = ctx->ops->open(name, ctx)))
		return bench_fail("opening the floor's own context", s, true);
	return 0;
}

static const struct section *section_of(const char *id)
{
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (!strcmp(sections[i].id, id))
			return &sections[i];
	return &sections[0];
}

/* Below a few ns a ratio says nothing: such rows show the difference. */
static bool ratio_meaningful(const struct bench_result *r)
{
	return r->floor_med >= 5;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_json(const char *device, const struct bench_result *res, const bool *ran)
{
	bool first = true;

	printf("{\"version\":");
	json_str(rshare_version());
	printf(",\"device\":");
	json_str(device);
	printf(",\"clock_cost_ns\":%" PRIu64 ",\"rows\":[", bench_clock_cost());
	for (size_t i = 0; i < bench_nrows; i++) {
		const struct bench_row *row = &bench_rows[i];
		const struct bench_result *r = &res[i];

		if (!ran[i])
			continue;
		printf("%s\n{\"section\":", first ? "" : ",");
		first = false;
		json_str(row->section);
		printf(",\"name\":");
		json_str(row->name);
		printf(",\"unit\":");
		json_str(section_of(row->section)->unit);
		printf(",\"median\":%.2f,\"p99\":%.2f,\"floor_median\":%.2f,\"floor_p99\":%.2f",
		       r->med, r->p99, r->floor_med, r->floor_p99);
		if (ratio_meaningful(r))
			printf(",\"ratio\":%.3f", r->med / r->floor_med);
		else
			printf(",\"ratio\":null,\"difference\":%.2f", r->med - r->floor_med);
		if (r->pinned)
			printf(",\"pinned_bytes\":%" PRIu64 ",\"floor_pinned_bytes\":%" PRIu64,
			       r->pinned, r->floor_pinned);
		if (row->aim > 0 && ratio_meaningful(r)) {
			printf(",\"aim\":%.2f,\"aim_met\":%s", row->aim,
			       r->med / r->floor_med <= row->aim ? "true" : "false");
			if (r->med / r->floor_med > row->aim) {
				printf(",\"why\":");
				json_str(row->why);
			}
		}
		putchar('}');
	}
	printf("\n]}\n");
}

static void print_text(const char *device, const struct bench_result *res, const bool *ran)
{
	const char *cur = NULL;
	int missed = 0;

	printf("rshare-bench %s on %s (clock cost %" PRIu64
	       " ns subtracted; ratios are to the floor in this run)\n",
	       rshare_version(), device, bench_clock_cost());
	for (size_t i = 0; i < bench_nrows; i++) {
		const struct bench_row *row = &bench_rows[i];
		const struct bench_result *r = &res[i];
		const struct section *sec = section_of(row->section);

		if (!ran[i])
			continue;
		if (!cur || strcmp(cur, row->section)) {
			cur = row->section;
			printf("\n%-26s %9s %9s   %9s %9s   %7s  %s\n", sec->title, "median",
			       "p99", sec->floor_title, "p99", "ratio", "aim");
		}
		printf("%-26s %9.2f %9.2f   %9.2f %9.2f   ", row->name, r->med, r->p99,
		       r->floor_med, r->floor_p99);
		if (!ratio_meaningful(r)) {
			printf("%+6.0f %s\n", r->med - r->floor_med, sec->unit);
			continue;
		}
		printf("%6.2fx", r->med / r->floor_med);
		if (row->aim > 0) {
			double over = r->med / r->floor_med - row->aim;
			if (over > 0) {
				printf("  %.2fx missed by %.2fx (%.0f%%)", row->aim, over,
				       100 * over / row->aim);
				missed++;
			} else {
				printf("  %.2fx met", row->aim);
			}
		}
		if (r->pinned)
			printf("  pinned %" PRIu64 " MiB vs %" PRIu64 " MiB", r->pinned >> 20,
			       r->floor_pinned >> 20);
		putchar('\n');
	}
	printf("\nfloor: the provider's own calls (plus blob encode/validate for export and\n"
	       "import); raw fd: sendmsg(SCM_RIGHTS) + recvmsg + close with the same payload;\n"
	       "private: each process registering memory of its own instead (pinned: the\n"
	       "bytes of the distinct registrations, what the MRs pin on hardware).\n");
	if (!missed)
		return;
	printf("\nWhy the missed aims are missed:\n");
	for (size_t i = 0; i < bench_nrows; i++) {
		const struct bench_row *row = &bench_rows[i];
		const struct bench_result *r = &res[i];

		if (ran[i] && row->aim > 0 && ratio_meaningful(r) &&
		    r->med / r->floor_med > row->aim)
			printf("  %s: +%.1f %s = %s\n", row->name, r->med - r->floor_med,
			       section_of(row->section)->unit, row->why);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "quick", no_argument, NULL, 'q' },
		{ "row", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *device = NULL, *only = NULL;
	struct bench_env env = { .scale = 1 };
	struct rs_ctx ctx = { .fd = -1 };
	struct bench_result *res;
	bool json = false, *ran;
	int c, s, status = 0;

	if (argc > 1 && !strcmp(argv[1], "__peer"))
		return bench_share_peer(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "__broker-peer"))
		return bench_broker_peer(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'j': json = true; break;
		case 'q': env.scale = 10; break;
		case 'r': only = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rshare-bench: unexpected argument \"%s\"\n%s", argv[optind], usage);
		return 2;
	}
	/* The exec'd sharing peers run this very program. */
	env.self = realpath("/proc/self/exe", NULL);
	res = calloc(bench_nrows, sizeof(*res));
	ran = calloc(bench_nrows, sizeof(*ran));
	if (!env.self || !res || !ran) {
		fputs("rshare-bench: out of memory\n", stderr);
		return 1;
	}
	if ((s = rshare_device_open(device, &env.dev))) {
		bench_fail("opening the device", s, false);
		return 1;
	}
	if (open_floor(env.dev, &ctx))
		return 1;
	env.ctx = &ctx;
	bench_calibrate();
	for (size_t i = 0; i < bench_nrows && !status; i++) {
		if (only && !strstr(bench_rows[i].name, only))
			continue;
		status = bench_rows[i].run(&env, bench_rows[i].arg, &res[i]);
		ran[i] = !status;
	}
	if (!status)
		(json ? print_json : print_text)(ctx.name, res, ran);
	ctx.ops->close(&ctx);
	bench_share_release();
	if ((s = rshare_device_close(env.dev)))
		bench_fail("closing the device", s, false);
	free(res);
	free(ran);
	free((void *)env.self);
	return status || s ? 1 : 0;
}
