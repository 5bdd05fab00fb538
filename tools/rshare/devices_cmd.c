/* rshare devices [--json] */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_devices(int argc, char **argv)
{
	char name[RSHARE_NAME_MAX];
	size_t n;
	int json = argc > 1 && !strcmp(argv[1], "--json");
	int status;

	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "usage: rshare devices [--json]\n");
		return 2;
	}
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
		if (json)
			printf("%s{\"name\":\"%s\",\"guid\":\"0x%016" PRIx64
			       "\",\"provider\":\"%s\"}",
			       i ? "," : "", name, guid, cli_provider_name(provider));
		else
			printf("%-16s 0x%016" PRIx64 " %s\n", name, guid,
			       cli_provider_name(provider));
	}
	if (json)
		printf("]\n");
	else if (!n)
		printf("no devices (RSHARE_SIM=0 hides sim0)\n");
	return 0;
}
