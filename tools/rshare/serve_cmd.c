/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare serve [--socket PATH]: the broker in the foreground until SIGTERM
 * or SIGINT. Under systemd socket activation (no --socket) it serves the
 * socket systemd passes. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>

#include "cli.h"

static int run_serve(int argc, char **argv);

const struct cli_command cli_serve = {
	.name = "serve",
	.args = "[--socket PATH]",
	.summary = "run a broker for named shares, in the foreground until SIGTERM/SIGINT",
	.options = "  -s, --socket=PATH   the socket to listen on (default: $RSHARE_BROKER,\n"
		   "                      $XDG_RUNTIME_DIR/rshare/broker.sock, /run/rshare/broker.sock\n"
		   "                      for root, else /tmp/rshare-$UID/broker.sock; systemd\n"
		   "                      socket activation when $LISTEN_FDS is set)\n",
	.run = run_serve,
};

static const struct option serve_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	CLI_OPT_HELP,
	{ 0 },
};

static int run_serve(int argc, char **argv)
{
	const char *endpoint = NULL;
	char path[256];
	rshare_broker *broker;
	struct rlimit rl;
	sigset_t stop;
	size_t n;
	int c, sig, status;

	while ((c = cli_getopt(&cli_serve, argc, argv, "s:h", serve_opts)) != -1)
		if (c == 's')
			endpoint = optarg;
	if (optind < argc)
		cli_usage_error(&cli_serve, "unexpected argument '%s'", argv[optind]);
	/* Each share holds a device fd and usually a connection. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Blocked before the broker thread starts, so that it inherits the
	 * mask and the signals come to sigwait() below. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	status = rshare_broker_start(endpoint, &broker);
	if (status)
		return cli_fail("starting the broker", status);
	if (rshare_broker_endpoint(broker, path, sizeof(path), &n) == RSHARE_OK)
		fprintf(stderr, "rshare: broker serving %s\n", path);
	do
		sig = 0;
	while (sigwait(&stop, &sig) != 0);
	fprintf(stderr, "rshare: %s, stopping the broker\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	status = rshare_broker_stop(broker);
	return status ? cli_fail("stopping the broker", status) : 0;
}
