/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare withdraw NAME: withdraw a share by name (a persistent one,
 * typically), as its owner's uid or root. */
#include "cli.h"

static int run_withdraw(int argc, char **argv);

const struct cli_command cli_withdraw = {
	.name = "withdraw",
	.args = "[--socket PATH] NAME",
	.summary = "withdraw a share by name (its owner's uid or root)",
	.options = "  -s, --socket=PATH   the broker's socket (default: as rshare serve)\n",
	.run = run_withdraw,
};

static const struct option withdraw_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	CLI_OPT_HELP,
	{ 0 },
};

static int run_withdraw(int argc, char **argv)
{
	const char *endpoint = NULL;
	int c, status;

	while ((c = cli_getopt(&cli_withdraw, argc, argv, "s:h", withdraw_opts)) != -1)
		if (c == 's')
			endpoint = optarg;
	if (argc - optind != 1)
		cli_usage_error(&cli_withdraw, "expected one NAME");
	status = rshare_broker_withdraw_name(endpoint, argv[optind]);
	if (status)
		return cli_broker_fail("withdrawing", status, 0);
	printf("withdrew %s\n", argv[optind]);
	return 0;
}
