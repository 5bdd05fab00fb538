/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare: list devices, run the sharing demo, inspect blobs. The benchmark is
 * a separate program, rshare-bench (tools/bench). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int run_version(int argc, char **argv);

static const struct cli_command cli_version = {
	.name = "version",
	.args = "",
	.summary = "print the library version",
	.options = "",
	.run = run_version,
};

/* Every subcommand, in the order `rshare --help` lists them. */
static const struct cli_command *const commands[] = {
	&cli_devices, &cli_demo, &cli_selftest, &cli_inspect, &cli_serve, &cli_shares,
	&cli_publish, &cli_attach, &cli_withdraw, &cli_version, &cli_demo_worker,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct option version_opts[] = { CLI_OPT_HELP, { 0 } };

static int run_version(int argc, char **argv)
{
	while (cli_getopt(&cli_version, argc, argv, "h", version_opts) != -1)
		;
	if (optind < argc)
		cli_usage_error(&cli_version, "unexpected argument '%s'", argv[optind]);
	printf("rshare %s\n", rshare_version());
	return 0;
}

static void print_usage(FILE *f)
{
	fputs("usage: rshare <command> [options]\n\n"
	      "Share RDMA objects between processes: devices, blobs, the sharing demo.\n\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char left[64];
		if (commands[i]->hidden)
			continue;
		snprintf(left, sizeof(left), "%s %s", commands[i]->name, commands[i]->args);
		fprintf(f, "  %-38s %s\n", left, commands[i]->summary);
	}
	fputs("\nRun 'rshare <command> --help' for a command's options.\n", f);
}

/* A full disk or a closed pipe must not pass for success: flush and close
 * stdout at exit and turn a write error into exit status 1. */
static void close_stdout(void)
{
	int err = ferror(stdout);

	if (fclose(stdout) != 0 || err) {
		fprintf(stderr, "rshare: write error%s%s\n", errno ? ": " : "",
			errno ? strerror(errno) : "");
		_exit(1);
	}
}

int main(int argc, char **argv)
{
	static char argv0[64];

	atexit(close_stdout);
	if (argc < 2) {
		print_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		print_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		argv[1] = (char *)"version";
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i]->name) != 0)
			continue;
		/* getopt's messages start with argv[0]: "rshare NAME". */
		snprintf(argv0, sizeof(argv0), "rshare %s", commands[i]->name);
		argv[1] = argv0;
		return commands[i]->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "rshare: unknown command '%s'\n", argv[1]);
	fputs("Try 'rshare --help'.\n", stderr);
	return 2;
}
