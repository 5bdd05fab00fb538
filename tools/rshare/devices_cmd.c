/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare devices [--json] [--verbose] */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

static int run_devices(int argc, char **argv);

const struct cli_command cli_devices = {
	.name = "devices",
	.args = "[--json] [--verbose]",
	.summary = "list devices (hardware first, then sim0)",
	.options = "  -j, --json          print a JSON array of {name, guid, provider, caps}\n"
		   "  -v, --verbose       also the rdma-core libraries loaded (paths), the\n"
		   "                      version nodes they resolve, each device's checking\n"
		   "                      level and why each capability is off; with --json\n"
		   "                      an object {rdma_core, devices}\n",
	.run = run_devices,
};

static const struct option devices_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "verbose", no_argument, NULL, 'v' },
	CLI_OPT_HELP,
	{ 0 },
};

/* The capability bits by name, in enum rshare_caps order. */
static const struct {
	uint32_t bit;
	const char *name;
} cap_names[] = {
	{ RSHARE_CAP_PD, "pd" },   { RSHARE_CAP_VAR, "var" },       { RSHARE_CAP_MR, "mr" },
	{ RSHARE_CAP_DM, "dm" },   { RSHARE_CAP_NATIVE, "native" },
	{ RSHARE_CAP_LEDGER, "ledger" }, { RSHARE_CAP_BUF, "buf" },   { RSHARE_CAP_DM_MAP, "dm_map" },
};
#define NCAPS (sizeof(cap_names) / sizeof(cap_names[0]))

/* What device name can do, asked of an open context (rshare_device_caps);
 * -1 (the reason on stderr) if it cannot be opened here. */
static int64_t device_caps(const char *name)
{
	rshare_device *dev;
	uint32_t caps = 0;
	int status = rshare_device_open(name, &dev);

	if (!status) {
		status = rshare_device_caps(dev, &caps);
		rshare_device_close(dev);
	}
	if (status) {
		fprintf(stderr, "rshare devices: %s: capabilities unknown: %s\n", name,
			rshare_last_error());
		return -1;
	}
	return caps;
}

/* "pd,var,mr" (text) or ["pd","var","mr"] (JSON); "?" or null if unknown. */
static void print_caps(int64_t caps, int json)
{
	int first = 1;

	if (caps < 0) {
		fputs(json ? "null" : "?", stdout);
		return;
	}
	if (json)
		putchar('[');
	for (size_t i = 0; i < NCAPS; i++) {
		if (!(caps & cap_names[i].bit))
			continue;
		printf(json ? "%s\"%s\"" : "%s%s", first ? "" : ",", cap_names[i].name);
		first = 0;
	}
	if (json)
		putchar(']');
	else if (first)
		putchar('-');
}

/* The loaded rdma-core: libraries and version nodes. */
static void print_rdma_core(const struct doctor *d, int json)
{
	const char *libs[2][2] = { { "libibverbs", d->verbs_path }, { "libmlx5", d->mlx5_path } };

	if (!json)
		printf("rdma-core\n");
	else
		printf("\"rdma_core\":{");
	for (int l = 0; l < 2; l++) {
		int first = 1;

		if (json) {
			printf("%s\"%s\":{\"path\":", l ? "," : "", libs[l][0]);
			if (libs[l][1][0])
				cli_json_string(stdout, libs[l][1]);
			else
				fputs("null", stdout);
			printf(",\"nodes\":{");
		} else {
			printf("  %-11s %s\n", libs[l][0],
			       libs[l][1][0] ? libs[l][1] : "not loaded");
		}
		for (size_t i = 0; i < d->nnodes; i++) {
			const struct doctor_node *nd = &d->nodes[i];

			if (strcmp(nd->lib, libs[l][0]) != 0)
				continue;
			if (json)
				printf("%s\"%s\":%s", first ? "" : ",", nd->node,
				       nd->resolved ? "true" : "false");
			else
				printf("    %-13s %-9s %s\n", nd->node,
				       nd->resolved ? "resolved" : "missing", nd->gives);
			first = 0;
		}
		if (json)
			printf("}}");
	}
	if (json)
		printf("},");
}

/* A device's checking level and the reasons its capabilities are off. */
static void print_verbose(const struct doctor *d, int provider, int64_t caps, int json)
{
	static const uint32_t sharing[] = { RSHARE_CAP_PD, RSHARE_CAP_VAR, RSHARE_CAP_MR,
					    RSHARE_CAP_DM, RSHARE_CAP_LEDGER };
	int first = 1;

	if (caps < 0)
		return;
	if (json)
		printf(",\"checking\":\"%s\",\"off\":{", doctor_level(provider, (uint32_t)caps));
	else
		printf("  checking level: %s\n", doctor_level(provider, (uint32_t)caps));
	for (size_t i = 0; i < sizeof(sharing) / sizeof(sharing[0]); i++) {
		const char *why = doctor_why_off(d, provider, (uint32_t)caps, sharing[i]);
		const char *cap = "?";

		if (!why)
			continue;
		for (size_t k = 0; k < NCAPS; k++)
			if (cap_names[k].bit == sharing[i])
				cap = cap_names[k].name;
		if (json) {
			printf("%s\"%s\":", first ? "" : ",", cap);
			cli_json_string(stdout, why);
		} else {
			printf("  %s off: %s\n", cap, why);
		}
		first = 0;
	}
	if (json)
		putchar('}');
}

static int run_devices(int argc, char **argv)
{
	char name[RSHARE_NAME_MAX];
	struct doctor d = { 0 };
	size_t n;
	int json = 0, verbose = 0, status, c;

	while ((c = cli_getopt(&cli_devices, argc, argv, "jvh", devices_opts)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'v')
			verbose = 1;
	}
	if (optind < argc)
		cli_usage_error(&cli_devices, "unexpected argument '%s'", argv[optind]);
	status = rshare_devices_count(&n);
	if (status)
		return cli_fail("listing devices", status);
	if (verbose) {
		doctor_probe(&d); /* the listing has loaded rdma-core */
		if (json)
			putchar('{');
		print_rdma_core(&d, json);
		if (json)
			printf("\"devices\":");
	}
	if (json)
		printf("[");
	else if (n)
		printf("%-16s %-18s %-9s %s\n", "NAME", "GUID", "PROVIDER", "CAPS");
	for (size_t i = 0; i < n; i++) {
		uint64_t guid;
		int64_t caps;
		int provider;

		status = rshare_devices_get(i, name, sizeof(name), &guid, &provider);
		if (status)
			return cli_fail("reading the device list", status);
		if (json) {
			/* A hardware device's name comes from the kernel: escape it. */
			printf("%s{\"name\":", i ? "," : "");
			cli_json_string(stdout, name);
			printf(",\"guid\":\"0x%016" PRIx64 "\",\"provider\":\"%s\",\"caps\":", guid,
			       cli_provider_name(provider));
			caps = device_caps(name);
			print_caps(caps, 1);
			if (verbose)
				print_verbose(&d, provider, caps, 1);
			putchar('}');
		} else {
			printf("%-16s 0x%016" PRIx64 " %-9s ", name, guid,
			       cli_provider_name(provider));
			caps = device_caps(name);
			print_caps(caps, 0);
			putchar('\n');
			if (verbose)
				print_verbose(&d, provider, caps, 0);
		}
	}
	if (json)
		printf(verbose ? "]}\n" : "]\n");
	else if (!n)
		printf("no devices (RSHARE_SIM=0 hides sim0)\n");
	return 0;
}
