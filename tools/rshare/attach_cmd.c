/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare attach NAME [-- CMD ARGS...]: attach to a share; print what it
 * holds, or run CMD with the device fd and the blobs' text forms in its
 * environment: RSHARE_DEVICE_FD, RSHARE_BLOBS (space-separated) and
 * RSHARE_PD / RSHARE_VAR (the first blob of each kind). With CMD, rshare
 * becomes CMD (its exit status is CMD's), or exits 127 (CMD not found) or
 * 126 (found, but not executable). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int run_attach(int argc, char **argv);

const struct cli_command cli_attach = {
	.name = "attach",
	.args = "[OPTIONS] NAME [-- CMD...]",
	.summary = "attach to a share by name; print it, or run CMD with its device fd and blobs "
		   "in RSHARE_DEVICE_FD, RSHARE_BLOBS, RSHARE_PD, RSHARE_VAR",
	.options = "  -s, --socket=PATH   the broker's socket (default: as rshare serve)\n"
		   "  -t, --timeout=MS    wait up to MS milliseconds for NAME (-1: no limit;\n"
		   "                      default 0: do not wait)\n",
	.run = run_attach,
};

static const struct option attach_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "timeout", required_argument, NULL, 't' },
	CLI_OPT_HELP,
	{ 0 },
};

static int run_attach(int argc, char **argv)
{
	static unsigned char payload[RSHARE_PAYLOAD_MAX];
	static char blobs[RSHARE_PAYLOAD_MAX / 44 * RSHARE_TEXT_MAX];
	const char *endpoint = NULL, *name;
	char text[RSHARE_TEXT_MAX], num[16];
	size_t len, off = 0, bl = 0, tn;
	int c, timeout = 0, fd, status;
	rshare_device *dev;

	while ((c = cli_getopt(&cli_attach, argc, argv, "+s:t:h", attach_opts)) != -1) {
		if (c == 's')
			endpoint = optarg;
		else if (c == 't')
			timeout = cli_int_arg(&cli_attach, "--timeout", optarg, -1, 86400000);
	}
	if (optind >= argc)
		cli_usage_error(&cli_attach, "expected a NAME");
	if (optind + 1 < argc && (strcmp(argv[optind + 1], "--") != 0 || optind + 2 >= argc))
		cli_usage_error(&cli_attach, "expected NAME -- CMD [ARGS...]");
	name = argv[optind];
	status = rshare_broker_attach(endpoint, name, timeout, &dev, payload, sizeof(payload), &len);
	if (status)
		return cli_broker_fail("attaching", status, timeout != 0);
	rshare_device_fd(dev, &fd);
	if (optind + 1 >= argc)
		printf("{\"name\":\"%s\",\"payload_size\":%zu,\"blobs\":[", name, len);
	/* The payload is by convention a sequence of blobs. */
	while (off < len) {
		size_t n;
		int kind;

		if (rshare_blob_size(payload + off, len - off, &n) ||
		    rshare_blob_kind(payload + off, n, &kind) ||
		    rshare_blob_to_text(payload + off, n, text, sizeof(text), &tn))
			break;
		if (optind + 1 >= argc)
			printf("%s\"%s\"", off ? "," : "", text);
		bl += (size_t)snprintf(blobs + bl, sizeof(blobs) - bl, "%s%s", bl ? " " : "", text);
		if (kind == RSHARE_KIND_PD && !getenv("RSHARE_PD"))
			setenv("RSHARE_PD", text, 1);
		if (kind == RSHARE_KIND_VAR && !getenv("RSHARE_VAR"))
			setenv("RSHARE_VAR", text, 1);
		off += n;
	}
	if (optind + 1 >= argc) {
		printf("]}\n");
		return 0;
	}
	/* Hand the fd to CMD: the only fd made inheritable. */
	fcntl(fd, F_SETFD, 0);
	snprintf(num, sizeof(num), "%d", fd);
	setenv("RSHARE_DEVICE_FD", num, 1);
	setenv("RSHARE_BLOBS", blobs, 1);
	execvp(argv[optind + 2], argv + optind + 2);
	/* As env(1) and the shells: 127 when CMD is not found, 126 when it is
	 * found but cannot be run; the message names CMD. */
	int err = errno;
	fprintf(stderr, "rshare attach: %s: %s\n", argv[optind + 2], strerror(err));
	return err == ENOENT ? 127 : 126;
}
