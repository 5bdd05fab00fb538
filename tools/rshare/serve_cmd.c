/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare serve [--socket PATH] [--ready-fd N]: the broker in the foreground
 * until SIGTERM or SIGINT. Under systemd socket activation (no --socket) it
 * serves the socket systemd passes. Once it listens it says so, for scripts
 * (a line on fd N) and for systemd (READY=1 to $NOTIFY_SOCKET), so that
 * nobody has to guess with sleep. A clean stop removes the socket and its
 * lock file. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

static int run_serve(int argc, char **argv);

const struct cli_command cli_serve = {
	.name = "serve",
	.args = "[--socket PATH] [--ready-fd N]",
	.summary = "run a broker for named shares, in the foreground until SIGTERM/SIGINT",
	.options = "  -s, --socket=PATH   the socket to listen on (default: $RSHARE_BROKER,\n"
		   "                      $XDG_RUNTIME_DIR/rshare/broker.sock, /run/rshare/broker.sock\n"
		   "                      for root, else /tmp/rshare-$UID/broker.sock; systemd\n"
		   "                      socket activation when $LISTEN_FDS is set)\n"
		   "  -r, --ready-fd=N    once listening, write \"ready PATH\" and a newline to fd N\n"
		   "                      and close it (e.g. 3>fifo, then read line <fifo);\n"
		   "                      with $NOTIFY_SOCKET set, READY=1 goes to systemd as well\n",
	.run = run_serve,
};

static const struct option serve_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "ready-fd", required_argument, NULL, 'r' },
	CLI_OPT_HELP,
	{ 0 },
};

/* Tell the waiting script (fd ready, or -1) and systemd that we listen. */
static void announce(int ready, const char *path)
{
	char line[300], state[320];
	int n = snprintf(line, sizeof(line), "ready %s\n", path);
	ssize_t r;

	if (ready >= 0) {
		do
			r = write(ready, line, (size_t)n);
		while (r < 0 && errno == EINTR);
		if (r != n)
			fprintf(stderr, "rshare: --ready-fd %d: %s\n", ready,
				r < 0 ? strerror(errno) : "short write");
		close(ready);
	}
	snprintf(state, sizeof(state), "READY=1\nSTATUS=serving %s\nMAINPID=%d", path,
		 (int)getpid());
	if (cli_sd_notify(state) != 0)
		fprintf(stderr, "rshare: cannot notify systemd ($NOTIFY_SOCKET): %s\n",
			strerror(errno));
}

static int run_serve(int argc, char **argv)
{
	const char *endpoint = NULL;
	char path[256];
	rshare_broker *broker;
	struct rlimit rl;
	sigset_t stop;
	size_t n;
	int c, sig, status, ready = -1;

	while ((c = cli_getopt(&cli_serve, argc, argv, "s:r:h", serve_opts)) != -1) {
		if (c == 's')
			endpoint = optarg;
		else if (c == 'r')
			ready = cli_int_arg(&cli_serve, "--ready-fd", optarg, 0, 1 << 20);
	}
	if (optind < argc)
		cli_usage_error(&cli_serve, "unexpected argument '%s'", argv[optind]);
	if (ready >= 0 && fcntl(ready, F_GETFD) < 0)
		cli_usage_error(&cli_serve, "--ready-fd %d is not an open file descriptor", ready);
	if (ready >= 0)
		fcntl(ready, F_SETFD, FD_CLOEXEC);
	/* Each share holds a device fd and usually a connection. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* A script that stopped reading the ready fd must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	/* Blocked before the broker thread starts, so that it inherits the
	 * mask and the signals come to sigwait() below. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	status = rshare_broker_start(endpoint, &broker);
	if (status)
		return cli_broker_fail("starting the broker", status, 0);
	if (rshare_broker_endpoint(broker, path, sizeof(path), &n) != RSHARE_OK)
		snprintf(path, sizeof(path), "?");
	fprintf(stderr, "rshare: broker serving %s\n", path);
	announce(ready, path);
	do
		sig = 0;
	while (sigwait(&stop, &sig) != 0);
	fprintf(stderr, "rshare: %s, stopping the broker\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	cli_sd_notify("STOPPING=1");
	status = rshare_broker_stop(broker);
	return status ? cli_fail("stopping the broker", status) : 0;
}
