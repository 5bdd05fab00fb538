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
	.options = "  -j, --json          print a JSON array of {name, guid, provider}\n",
	.run = run_devices,
};

static const struct option devices_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	CLI_OPT_HELP,
	{ 0 },
};

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
		printf("%-16s %-18s %s\n", "NAME", "GUID", "PROVIDER");
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
			printf(",\"guid\":\"0x%016" PRIx64 "\",\"provider\":\"%s\"}", guid,
			       cli_provider_name(provider));
		} else
			printf("%-16s 0x%016" PRIx64 " %s\n", name, guid,
			       cli_provider_name(provider));
	}
	if (json)
		printf("]\n");
	else if (!n)
		printf("no devices (RSHARE_SIM=0 hides sim0)\n");
	return 0;
}
