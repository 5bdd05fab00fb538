/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare shares [--socket PATH] [--json]: what a broker holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Copy the value of "key" in the flat JSON object at obj (up to its end)
 * into out: a string without its quotes, anything else as written. */
static void field(const char *obj, const char *end, const char *key, char *out, size_t cap)
{
	char pat[32];
	const char *p, *q;
	size_t n;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(obj, pat);
	out[0] = '\0';
	if (!p || p >= end)
		return;
	p += strlen(pat);
	if (*p == '"')
		q = strchr(++p, '"');
	else if (*p == '[')
		q = strchr(p, ']') ? strchr(p, ']') + 1 : NULL;
	else
		q = p + strcspn(p, ",}");
	if (!q)
		return;
	n = (size_t)(q - p) < cap - 1 ? (size_t)(q - p) : cap - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

static int print_table(const char *json)
{
	char name[300], uid[16], pid[16], size[16], blobs[128], att[24], created[24], pers[8];
	int rows = 0;

	for (const char *o = strchr(json, '{'); o; o = strchr(o + 1, '{')) {
		const char *end = strchr(o, '}');
		char when[32] = "?";
		time_t t;
		struct tm tm;

		field(o, end, "name", name, sizeof(name));
		field(o, end, "owner_uid", uid, sizeof(uid));
		field(o, end, "owner_pid", pid, sizeof(pid));
		field(o, end, "payload_size", size, sizeof(size));
		field(o, end, "blobs", blobs, sizeof(blobs));
		field(o, end, "attaches", att, sizeof(att));
		field(o, end, "created", created, sizeof(created));
		field(o, end, "persistent", pers, sizeof(pers));
		t = (time_t)strtoll(created, NULL, 10);
		if (localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		if (!rows++)
			printf("%-32s %6s %8s %7s %-16s %8s %-10s %s\n", "NAME", "UID", "PID",
			       "PAYLOAD", "BLOBS", "ATTACHES", "LIFETIME", "CREATED");
		printf("%-32s %6s %8s %7s %-16s %8s %-10s %s\n", name, uid, pid, size, blobs, att,
		       strcmp(pers, "true") ? "publisher" : "persistent", when);
	}
	if (!rows)
		printf("no shares\n");
	return 0;
}

/* The waiting attaches ({name, uid, pid, waited_ms} objects) as a table. */
static int print_waiting(const char *json)
{
	char name[300], uid[16], pid[16], waited[24];
	int rows = 0;

	for (const char *o = strchr(json, '{'); o; o = strchr(o + 1, '{')) {
		const char *end = strchr(o, '}');

		field(o, end, "name", name, sizeof(name));
		field(o, end, "uid", uid, sizeof(uid));
		field(o, end, "pid", pid, sizeof(pid));
		field(o, end, "waited_ms", waited, sizeof(waited));
		if (!rows++)
			printf("%-32s %6s %8s %10s\n", "WAITING FOR", "UID", "PID", "WAITED_MS");
		printf("%-32s %6s %8s %10s\n", name, uid, pid, waited);
	}
	if (!rows)
		printf("no waiting attaches\n");
	return 0;
}

static int run_shares(int argc, char **argv);

const struct cli_command cli_shares = {
	.name = "shares",
	.args = "[OPTIONS]",
	.summary = "list the shares a broker holds (or the attaches waiting for one)",
	.options = "  -s, --socket=PATH   the broker's socket (default: as rshare serve)\n"
		   "  -j, --json          print the broker's JSON array of {name, owner_uid,\n"
		   "                      owner_pid, persistent, payload_size, blobs, attaches,\n"
		   "                      created}\n"
		   "  -w, --waiting       list the attaches waiting for a name instead (JSON:\n"
		   "                      {name, uid, pid, waited_ms})\n",
	.run = run_shares,
};

static const struct option shares_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "json", no_argument, NULL, 'j' },
	{ "waiting", no_argument, NULL, 'w' },
	CLI_OPT_HELP,
	{ 0 },
};

static int run_shares(int argc, char **argv)
{
	const char *endpoint = NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int c, json = 0, waiting = 0, status;
	int (*list)(const char *, char *, size_t, size_t *) = rshare_broker_list;

	while ((c = cli_getopt(&cli_shares, argc, argv, "s:jwh", shares_opts)) != -1) {
		if (c == 's')
			endpoint = optarg;
		else if (c == 'j')
			json = 1;
		else if (c == 'w')
			waiting = 1;
	}
	if (waiting)
		list = rshare_broker_waiting;
	if (optind < argc)
		cli_usage_error(&cli_shares, "unexpected argument '%s'", argv[optind]);
	/* The list can grow between the sizing call and the next: retry. */
	while ((status = list(endpoint, buf, cap, &len)) == RSHARE_E_NOSPACE) {
		free(buf);
		cap = len + 4096;
		buf = malloc(cap);
		if (!buf)
			return cli_fail("listing shares", RSHARE_E_NOMEM);
	}
	if (status) {
		free(buf);
		return cli_broker_fail(waiting ? "listing waiting attaches" : "listing shares",
				       status, 0);
	}
	if (json)
		printf("%s\n", buf);
	else if (waiting)
		print_waiting(buf);
	else
		print_table(buf);
	free(buf);
	return 0;
}
