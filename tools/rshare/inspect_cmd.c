/* rshare inspect BLOB|FILE|- : the text form, a binary blob file, or stdin
 * (either form), printed as JSON. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_inspect(int argc, char **argv)
{
	char raw[RSHARE_TEXT_MAX + 64], json[1024];
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t n, len;
	int status;

	if (argc != 2) {
		fprintf(stderr, "usage: rshare inspect BLOB|FILE|-\n");
		return 2;
	}
	if (!strncmp(argv[1], "rshare:", 7)) {
		snprintf(raw, sizeof(raw), "%s", argv[1]);
		n = strlen(raw);
	} else {
		FILE *f = strcmp(argv[1], "-") ? fopen(argv[1], "rb") : stdin;
		if (!f) {
			perror(argv[1]);
			return 1;
		}
		n = fread(raw, 1, sizeof(raw) - 1, f);
		if (f != stdin)
			fclose(f);
		raw[n] = '\0';
	}
	if (n >= 7 && !strncmp(raw, "rshare:", 7)) {
		status = rshare_blob_from_text(raw, blob, sizeof(blob), &len);
		if (status)
			return cli_fail("decoding the text form", status);
	} else {
		if (n > sizeof(blob)) {
			fprintf(stderr, "rshare: %s: longer than any blob (%d bytes)\n",
				argv[1], RSHARE_BLOB_MAX);
			return 1;
		}
		memcpy(blob, raw, n);
		len = n;
	}
	status = rshare_blob_describe(blob, len, json, sizeof(json), &n);
	if (status)
		return cli_fail("reading the blob", status);
	printf("%s\n", json);
	return 0;
}
