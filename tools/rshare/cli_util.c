/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Helpers shared by the subcommands: option parsing, errors, JSON, clock. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

void cli_print_help(const struct cli_command *cmd, FILE *f)
{
	fprintf(f, "usage: rshare %s%s%s\n\n%c%s.\n", cmd->name, *cmd->args ? " " : "",
		cmd->args, toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
	fprintf(f, "\noptions:\n%s  -h, --help          show this help and exit\n",
		cmd->options ? cmd->options : "");
}

static void try_help(const struct cli_command *cmd)
{
	fprintf(stderr, "Try 'rshare %s --help'.\n", cmd->name);
	exit(2);
}

int cli_getopt(const struct cli_command *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	/* argv[0] is "rshare NAME", so getopt's own messages name the
	 * subcommand and the option: "rshare demo: unrecognized option '--x'". */
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	if (c == 'h') {
		cli_print_help(cmd, stdout);
		exit(0);
	}
	if (c == '?' || c == ':')
		try_help(cmd);
	return c;
}

void cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rshare %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	try_help(cmd);
	abort(); /* not reached */
}

int cli_int_arg(const struct cli_command *cmd, const char *opt, const char *arg, int min,
		int max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		cli_usage_error(cmd, "%s must be an integer in %d..%d, not '%s'", opt, min, max,
				arg);
	return (int)v;
}

int cli_fail(const char *what, int status)
{
	fprintf(stderr, "rshare: %s: %s: %s\n", what, rshare_status_name(status),
		*rshare_last_error() ? rshare_last_error() : rshare_strerror(status));
	return CLI_EXIT_FAILURE;
}

int cli_broker_fail(const char *what, int status, int timed_out)
{
	int err = rshare_last_errno();

	cli_fail(what, status);
	switch (status) {
	case RSHARE_E_IO:
		return err == ENOENT || err == ECONNREFUSED ? CLI_EXIT_NO_BROKER : CLI_EXIT_FAILURE;
	case RSHARE_E_NOT_FOUND:
		return timed_out ? CLI_EXIT_TIMEOUT : CLI_EXIT_NOT_FOUND;
	case RSHARE_E_PERM:
		return CLI_EXIT_REFUSED;
	case RSHARE_E_BUSY:
		return CLI_EXIT_BUSY;
	default:
		return CLI_EXIT_FAILURE;
	}
}

void cli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f); /* UTF-8 passes through as is */
	}
	fputc('"', f);
}

uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *cli_provider_name(int provider)
{
	const char *name = rshare_provider_name(provider);

	return name ? name : "?";
}
