/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare publish NAME: allocate a PD and/or a VAR on a device and publish
 * them (the device and their blobs) under NAME, then stay until SIGTERM or
 * SIGINT (the share goes with this process), or with --persistent return at
 * once, leaving the share (and so the objects) to the broker. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_IDS RSHARE_SHARE_IDS_MAX

static int run_publish(int argc, char **argv);

const struct cli_command cli_publish = {
	.name = "publish",
	.args = "[OPTIONS] NAME",
	.summary = "allocate a PD and/or a VAR and publish them by name (until SIGTERM/SIGINT)",
	.options = "  -s, --socket=PATH   the broker's socket (default: as rshare serve)\n"
		   "  -d, --device=NAME   the device to open (default: the first)\n"
		   "  -p, --pd            publish a new PD (default: a PD and a VAR)\n"
		   "  -v, --var           publish a new VAR\n"
		   "  -P, --persistent    leave the share to the broker and return at once\n"
		   "  -u, --allow-uid=ID  let uid ID attach too (repeatable, at most 64)\n"
		   "  -g, --allow-gid=ID  let members of group ID attach too (repeatable)\n",
	.run = run_publish,
};

static const struct option publish_opts[] = {
	{ "socket", required_argument, NULL, 's' }, { "device", required_argument, NULL, 'd' },
	{ "pd", no_argument, NULL, 'p' },           { "var", no_argument, NULL, 'v' },
	{ "persistent", no_argument, NULL, 'P' },   { "allow-uid", required_argument, NULL, 'u' },
	{ "allow-gid", required_argument, NULL, 'g' }, CLI_OPT_HELP,
	{ 0 },
};

static void add_id(uint32_t *ids, uint32_t *n, const char *opt, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*arg == '\0' || *end || v > UINT32_MAX)
		cli_usage_error(&cli_publish, "%s must be a number, not '%s'", opt, arg);
	if (*n >= MAX_IDS)
		cli_usage_error(&cli_publish, "at most %d %s options", MAX_IDS, opt);
	ids[(*n)++] = (uint32_t)v;
}

/* Export obj's blob after what payload holds; prints its text form. */
static int append_blob(unsigned char *payload, size_t *len, const unsigned char *blob, size_t n,
		       const char *what)
{
	char text[RSHARE_TEXT_MAX];
	size_t tn;

	memcpy(payload + *len, blob, n);
	*len += n;
	if (rshare_blob_to_text(blob, n, text, sizeof(text), &tn) == RSHARE_OK)
		printf("%s %s\n", what, text);
	return 0;
}

static int run_publish(int argc, char **argv)
{
	uint32_t uids[MAX_IDS], gids[MAX_IDS];
	rshare_publish_opts o = { .size = sizeof(o), .uids = uids, .gids = gids };
	const char *endpoint = NULL, *device = NULL;
	unsigned char payload[2 * RSHARE_BLOB_MAX], blob[RSHARE_BLOB_MAX];
	size_t len = 0, n;
	int c, want_pd = 0, want_var = 0, status, sig;
	rshare_device *dev;
	rshare_pd *pd = NULL;
	rshare_var *var = NULL;
	rshare_share *share;
	sigset_t stop;

	while ((c = cli_getopt(&cli_publish, argc, argv, "s:d:pvPu:g:h", publish_opts)) != -1) {
		switch (c) {
		case 's': endpoint = optarg; break;
		case 'd': device = optarg; break;
		case 'p': want_pd = 1; break;
		case 'v': want_var = 1; break;
		case 'P': o.flags |= RSHARE_PUBLISH_PERSISTENT; break;
		case 'u': add_id(uids, &o.n_uids, "--allow-uid", optarg); break;
		case 'g': add_id(gids, &o.n_gids, "--allow-gid", optarg); break;
		}
	}
	if (argc - optind != 1)
		cli_usage_error(&cli_publish, "expected one NAME");
	if (!want_pd && !want_var)
		want_pd = want_var = 1;
	status = rshare_device_open(device, &dev);
	if (status)
		return cli_fail("opening the device", status);
	if (want_pd) {
		status = rshare_pd_alloc(dev, &pd);
		if (!status)
			status = rshare_pd_export(pd, blob, sizeof(blob), &n);
		if (status)
			return cli_fail("allocating a PD", status);
		append_blob(payload, &len, blob, n, "pd");
	}
	if (want_var) {
		status = rshare_var_alloc(dev, 0, &var);
		if (!status)
			status = rshare_var_export(var, blob, sizeof(blob), &n);
		if (status)
			return cli_fail("allocating a VAR", status);
		append_blob(payload, &len, blob, n, "var");
	}
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	status = rshare_broker_publish(endpoint, argv[optind], dev, payload, len, &o, &share);
	if (status)
		return cli_broker_fail("publishing", status, 0);
	printf("published %s\n", argv[optind]);
	fflush(stdout);
	if (o.flags & RSHARE_PUBLISH_PERSISTENT)
		return 0; /* the broker keeps the context, and so the objects */
	do
		sig = 0;
	while (sigwait(&stop, &sig) != 0);
	rshare_broker_withdraw(share);
	if (var)
		rshare_var_free(var);
	if (pd)
		rshare_pd_free(pd);
	rshare_device_close(dev);
	return 0;
}
