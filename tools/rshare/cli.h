/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared helpers of the `rshare` command's subcommands.
 *
 * Adding a subcommand (one file, one job):
 *
 *   // foo_cmd.c
 *   #include "cli.h"
 *
 *   static int run_foo(int argc, char **argv);
 *
 *   const struct cli_command cli_foo = {
 *           .name = "foo",
 *           .args = "[--device NAME] BLOB",
 *           .summary = "one line for `rshare --help`",
 *           .options = "  -d, --device=NAME   the device to open (default: the first)\n",
 *           .run = run_foo,
 *   };
 *
 *   static const struct option foo_opts[] = {
 *           { "device", required_argument, NULL, 'd' },
 *           CLI_OPT_HELP,
 *           { 0 },
 *   };
 *
 *   static int run_foo(int argc, char **argv)
 *   {
 *           const char *device = NULL;
 *           int c;
 *
 *           while ((c = cli_getopt(&cli_foo, argc, argv, "d:h", foo_opts)) != -1)
 *                   if (c == 'd')
 *                           device = optarg;
 *           if (argc - optind != 1)
 *                   cli_usage_error(&cli_foo, "expected one BLOB");
 *           ...argv[optind]...
 *   }
 *
 * then declare `extern const struct cli_command cli_foo;` below, add
 * &cli_foo to the table in main.c and foo_cmd.c to CMakeLists.txt. --help,
 * unknown options (named in the message) and exit status 2 on usage errors
 * come from cli_getopt; the man page rshare(1) and the bash completion are
 * made from the --help output, so they follow by themselves.
 */
#ifndef RSHARE_CLI_H
#define RSHARE_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "rshare/rshare.h"

/* One subcommand of `rshare`. */
struct cli_command {
	const char *name;    /* "devices" */
	const char *args;    /* synopsis after the name: "[--json]" */
	const char *summary; /* one line, for `rshare --help` and the man page */
	const char *options; /* option lines for `rshare NAME --help`, "" if none */
	int (*run)(int argc, char **argv); /* argv[0] is "rshare NAME" */
	int hidden;          /* internal: not listed in help, man page or completion */
};

/* The --help entry every option table ends with (before { 0 }). */
#define CLI_OPT_HELP { "help", no_argument, NULL, 'h' }

/* getopt_long for a subcommand: returns the next option character, or -1
 * when the options are done (positional arguments start at optind).
 * Handles -h/--help itself (the help on stdout, exit 0), and an unknown
 * option or a missing argument (getopt names it on stderr, then a hint;
 * exit 2). shortopts must contain "h". */
int cli_getopt(const struct cli_command *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *longopts);

/* A usage error: "rshare NAME: <message>" and a hint on stderr, exit 2. */
void cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* The integer value of option `opt` in [min, max], or a usage error. */
int cli_int_arg(const struct cli_command *cmd, const char *opt, const char *arg, int min,
		int max);

/* Print a subcommand's help (usage, summary, options) to f. */
void cli_print_help(const struct cli_command *cmd, FILE *f);

/* Print "what: RSHARE_E_...: last error" to stderr; returns 1 (exit code). */
int cli_fail(const char *what, int status);

/* Exit statuses of the broker commands, so that scripts can tell the
 * causes apart (rshare(1), EXIT STATUS; keep the man page in step). */
enum cli_exit {
	CLI_EXIT_FAILURE = 1,    /* any other failure */
	CLI_EXIT_USAGE = 2,      /* bad options or arguments */
	CLI_EXIT_NO_BROKER = 3,  /* no broker listens on the socket */
	CLI_EXIT_NOT_FOUND = 4,  /* no share of that name */
	CLI_EXIT_TIMEOUT = 5,    /* attach --timeout passed before the name appeared */
	CLI_EXIT_REFUSED = 6,    /* not allowed: the share's policy, or not its owner */
	CLI_EXIT_BUSY = 7        /* the name is taken, or a broker already serves the socket */
};

/* cli_fail() for a broker call: the same message, and the exit status that
 * names the cause. timed_out: a wait for the name ran out (NOT_FOUND then
 * means CLI_EXIT_TIMEOUT). */
int cli_broker_fail(const char *what, int status, int timed_out);

/* Write s to f as a JSON string, quotes included, escaped (RFC 8259). */
void cli_json_string(FILE *f, const char *s);

/* Monotonic clock in nanoseconds. */
uint64_t cli_now_ns(void);
/* rshare_provider_name(), or "?" for a provider the library does not know. */
const char *cli_provider_name(int provider);

/* The subcommands (main.c lists them in this order). */
extern const struct cli_command cli_devices;
extern const struct cli_command cli_demo;
extern const struct cli_command cli_selftest;
extern const struct cli_command cli_demo_worker;
extern const struct cli_command cli_inspect;
extern const struct cli_command cli_serve;
extern const struct cli_command cli_shares;
extern const struct cli_command cli_publish;
extern const struct cli_command cli_attach;
extern const struct cli_command cli_withdraw;

/* serve's readiness: systemd's sd_notify() protocol, without libsystemd
 * (notify.c). Sends state (e.g. "READY=1") to $NOTIFY_SOCKET if set;
 * 0, or -1 with errno. */
int cli_sd_notify(const char *state);

#endif
