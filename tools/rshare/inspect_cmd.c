/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare inspect BLOB|FILE|- : the text form, a binary blob file, or stdin
 * (either form), printed as JSON. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define TEXT_PREFIX "rshare:"
#define FORMS "a text blob (rshare:<base64url>), a binary blob file, or - for stdin"

static int run_inspect(int argc, char **argv);

const struct cli_command cli_inspect = {
	.name = "inspect",
	.args = "BLOB|FILE|-",
	.summary = "print a blob (text form, binary file or stdin) as JSON",
	.options = "",
	.run = run_inspect,
};

static const struct option inspect_opts[] = { CLI_OPT_HELP, { 0 } };

/* Read up to cap - 1 bytes of path ("-": stdin) into raw, NUL-terminated.
 * Returns the length, or -1 after saying why on stderr. */
static long read_input(const char *path, char *raw, size_t cap)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	struct stat st;
	size_t n;

	if (!f) {
		if (errno == ENOENT)
			fprintf(stderr, "rshare inspect: %s: no such file, and not a text blob "
				"(expected " FORMS ")\n", path);
		else
			fprintf(stderr, "rshare inspect: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "rshare inspect: %s: is a directory (expected " FORMS ")\n", path);
		fclose(f);
		return -1;
	}
	n = fread(raw, 1, cap - 1, f);
	if (ferror(f)) {
		fprintf(stderr, "rshare inspect: %s: %s\n", path, strerror(errno));
		if (f != stdin)
			fclose(f);
		return -1;
	}
	if (f != stdin)
		fclose(f);
	raw[n] = '\0';
	return (long)n;
}

static int run_inspect(int argc, char **argv)
{
	char raw[RSHARE_TEXT_MAX + 64], json[1024];
	unsigned char blob[RSHARE_BLOB_MAX];
	const char *arg, *text;
	size_t n, len;
	long got;
	int status;

	while (cli_getopt(&cli_inspect, argc, argv, "h", inspect_opts) != -1)
		;
	if (argc - optind != 1)
		cli_usage_error(&cli_inspect, "expected one argument: " FORMS);
	arg = argv[optind];
	/* Pasted or echoed text often comes with surrounding whitespace; the
	 * library itself ignores trailing whitespace. */
	for (text = arg; isspace((unsigned char)*text); text++)
		;
	if (!strncmp(text, TEXT_PREFIX, strlen(TEXT_PREFIX))) {
		snprintf(raw, sizeof(raw), "%s", text);
		n = strlen(raw);
	} else {
		if ((got = read_input(arg, raw, sizeof(raw))) < 0)
			return 1;
		n = (size_t)got;
	}
	/* A binary blob starts with its magic, never with whitespace. */
	for (text = raw; isspace((unsigned char)*text); text++)
		;
	if (!strncmp(text, TEXT_PREFIX, strlen(TEXT_PREFIX))) {
		status = rshare_blob_from_text(text, blob, sizeof(blob), &len);
		if (status)
			return cli_fail("decoding the text form", status);
	} else {
		if (n > sizeof(blob)) {
			fprintf(stderr, "rshare inspect: %s: longer than any blob (%d bytes); "
				"expected " FORMS "\n", arg, RSHARE_BLOB_MAX);
			return 1;
		}
		memcpy(blob, raw, n);
		len = n;
	}
	status = rshare_blob_describe(blob, len, json, sizeof(json), &n);
	if (status) {
		cli_fail("reading the blob", status);
		fprintf(stderr, "rshare inspect: expected " FORMS "\n");
		return 1;
	}
	printf("%s\n", json);
	return 0;
}
