/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare devices [--json] */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int run_devices(int argc, char **argv);

const struct cli_command cli_devices = {
	.name = "devices",
	.args = "[--json]",
	.summary = "list devices (hardware first, then sim0)",
	.options = "  -j, --json          print a JSON array of {name, guid, provider, caps}\n",
	.run = run_devices,
};

static const struct option devices_opts[] = {
	{ "json", no_argument, NULL, 'j' },
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
	{ RSHARE_CAP_LEDGER, "ledger" },
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

static int run_devices(int argc, char **argv)
{
	char name[RSHARE_NAME_MAX];
	size_t n;
	int json = 0, status, c;

	while ((c = cli_getopt(&cli_devices, argc, argv, "jh", devices_opts)) != -1)
		if (c == 'j')
			json = 1;
	if (optind < argc)
		cli_usage_error(&cli_devices, "unexpected argument '%s'", argv[optind]);
	status = rshare_devices_count(&n);
	if (status)
		return cli_fail("listing devices", status);
	if (json)
		printf("[");
	else if (n)
		printf("%-16s %-18s %-9s %s\n", "NAME", "GUID", "PROVIDER", "CAPS");
	for (size_t i = 0; i < n; i++) {
		uint64_t guid;
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
			print_caps(device_caps(name), 1);
			putchar('}');
		} else {
			printf("%-16s 0x%016" PRIx64 " %-9s ", name, guid,
			       cli_provider_name(provider));
			print_caps(device_caps(name), 0);
			putchar('\n');
		}
	}
	if (json)
		printf("]\n");
	else if (!n)
		printf("no devices (RSHARE_SIM=0 hides sim0)\n");
	return 0;
}
