/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The `rshare` command, run as a user would: every subcommand, its output
 * and its exit status, including the error paths. RSHARE_CLI names the
 * binary (set by ctest).
 */
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "harness.h"

static char out[1 << 16];

/* Run a shell command line made from fmt (its first %s is the command's
 * path: pass CLI); capture stdout+stderr into out; exit status. */
#define CLI getenv("RSHARE_CLI")
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *p;
	size_t n;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	REQUIRE(p != NULL);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* cli_json_string on s, into buf. */
static const char *json_of(const char *s)
{
	static char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	REQUIRE(f != NULL);
	cli_json_string(f, s);
	fclose(f);
	return buf;
}

/* The conventions every subcommand follows (getopt_long). */
static void case_conventions(void)
{
	static const char *const cmds[] = { "devices", "demo",   "inspect", "version",
					    "serve",   "shares", "publish", "attach",
					    "withdraw" };

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char expect[64];

		/* --help: usage on stdout (stderr dropped), exit 0. */
		CHECK(run("%s %s --help 2>/dev/null", CLI, cmds[i]) == 0);
		snprintf(expect, sizeof(expect), "usage: rshare %s", cmds[i]);
		CHECK(strstr(out, expect) == out);
		CHECK(strstr(out, "--help") != NULL);
		CHECK(run("%s %s -h 2>/dev/null", CLI, cmds[i]) == 0);
		CHECK(strstr(out, expect) == out);
		/* An unknown option is named, on stderr, with exit 2. */
		CHECK(run("%s %s --no-such-option 2>&1 >/dev/null", CLI, cmds[i]) == 2);
		CHECK(strstr(out, "'--no-such-option'") != NULL);
		snprintf(expect, sizeof(expect), "rshare %s --help", cmds[i]);
		CHECK(strstr(out, expect) != NULL);
	}
	/* --opt=value and --opt value, a missing or bad value. */
	CHECK(run("%s demo --workers=2 2>&1", CLI) == 0);
	CHECK(count(out, "): imported PD 0") == 2);
	CHECK(run("%s demo --workers 2 --device=sim0 2>&1", CLI) == 0);
	CHECK(strstr(out, "opened sim0") != NULL);
	CHECK(run("%s demo --workers 2>&1", CLI) == 2);
	CHECK(strstr(out, "'--workers' requires an argument") != NULL);
	CHECK(run("%s demo --workers=two 2>&1", CLI) == 2);
	CHECK(strstr(out, "--workers must be an integer in 1..64, not 'two'") != NULL);
	CHECK(run("%s demo --workers=65 2>&1", CLI) == 2);
	CHECK(run("%s devices extra 2>&1", CLI) == 2);
	CHECK(strstr(out, "unexpected argument 'extra'") != NULL);
	CHECK(run("%s inspect 2>&1", CLI) == 2);
	CHECK(run("%s inspect a b 2>&1", CLI) == 2);
	/* The top level: usage on stdout for --help, stderr (exit 2) for nothing. */
	CHECK(run("%s --help 2>/dev/null", CLI) == 0);
	CHECK(strstr(out, "usage: rshare <command>") == out && strstr(out, "  devices"));
	CHECK(strstr(out, "__demo-worker") == NULL);
	CHECK(run("%s 2>/dev/null", CLI) == 2);
	CHECK(out[0] == '\0');
	CHECK(run("%s --version 2>&1", CLI) == 0);
	CHECK(strstr(out, "rshare 1.") == out);

	/* A write error is a failure, never exit 0. */
	CHECK(run("%s devices >/dev/full 2>&1", CLI) == 1);
	CHECK(run("%s devices --json 2>&1 >/dev/full", CLI) == 1);
	CHECK(strstr(out, "write error") != NULL);
	CHECK(run("%s --help 2>&1 >/dev/full", CLI) == 1);

	/* JSON strings are escaped. */
	CHECK(!strcmp(json_of("sim0"), "\"sim0\""));
	CHECK(!strcmp(json_of("a\"b\\c"), "\"a\\\"b\\\\c\""));
	CHECK(!strcmp(json_of("x\ny\t\x01\x7f"), "\"x\\ny\\t\\u0001\\u007f\""));
	CHECK(!strcmp(json_of("m\xc3\xa9"), "\"m\xc3\xa9\""));
}

/* inspect shows a buffer blob (1.2): its MR's fields and its memfd's. */
static void case_inspect_buffer(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char text[RSHARE_TEXT_MAX], want[64];
	rshare_device *d;
	rshare_pd *pd;
	rshare_buf *buf;
	size_t len, tlen;
	struct stat st;
	int fd;

	REQUIRE_OK(rshare_device_open("sim0", &d));
	REQUIRE_OK(rshare_pd_alloc(d, &pd));
	REQUIRE_OK(rshare_buf_alloc(pd, 8192, RSHARE_ACCESS_LOCAL_WRITE, &buf));
	REQUIRE_OK(rshare_buf_export(buf, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_blob_to_text(blob, len, text, sizeof(text), &tlen));
	REQUIRE_OK(rshare_buf_fd(buf, &fd));
	REQUIRE(fstat(fd, &st) == 0);
	CHECK(run("%s inspect %s 2>&1", CLI, text) == 0);
	CHECK(strstr(out, "\"kind\":\"buf\"") && strstr(out, "\"length\":8192") &&
	      strstr(out, "\"lkey\":"));
	snprintf(want, sizeof(want), "\"mem_ino\":%llu", (unsigned long long)st.st_ino);
	CHECK(strstr(out, want) != NULL);
	CHECK_OK(rshare_buf_free(buf));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(d));
}

static void setup(void)
{
	REQUIRE(getenv("RSHARE_CLI") != NULL);
}

/* devices: the list, as text and JSON; without sim0, nothing. */
static void case_devices(void)
{
	size_t n;

	CHECK(run("%s devices 2>&1", CLI) == 0);
	CHECK(strstr(out, "sim0") && strstr(out, " sim ") && strstr(out, "CAPS"));
	/* sim0's capabilities, every bit rshare_device_caps gives by name */
	CHECK(strstr(out, " pd,var,mr,dm,buf,dm_map\n") != NULL);
	CHECK(run("%s devices --json 2>&1", CLI) == 0);
	CHECK(out[0] == '[' && strstr(out, "{\"name\":\"sim0\",\"guid\":\"0x") &&
	      strstr(out, "\"provider\":\"sim\",\"caps\":[\"pd\",\"var\",\"mr\",\"dm\","
			  "\"buf\",\"dm_map\"]") &&
	      !strstr(out, "native"));
	REQUIRE_OK(rshare_devices_count(&n));
	if (n == 1) { /* no hardware here: hiding sim0 leaves nothing */
		CHECK(run("RSHARE_SIM=0 %s devices 2>&1", CLI) == 0);
		CHECK(strstr(out, "no devices") != NULL);
		CHECK(run("RSHARE_SIM=0 %s demo 2>&1", CLI) == 1);
		CHECK(strstr(out, "RSHARE_E_NODEV") != NULL);
	}
}

/* The demo: four workers, every check passed, the late import. */
static void case_demo(void)
{
	CHECK(run("%s demo --workers 4 2>&1", CLI) == 0);
	CHECK(count(out, "): imported PD 0 and VAR page 0, wrote slot") == 4);
	CHECK(strstr(out, "checked: every worker's write is in the shared VAR page") != NULL);
	/* The shared buffer (1.2): its memfd went with each message, every
	 * worker wrote its line into the one registered memory. */
	CHECK(strstr(out, "sent each the device fd, the blobs and the buffer's memfd") != NULL);
	CHECK(count(out, "of the shared buffer, unimported") == 4);
	CHECK(strstr(out, "checked: every worker's line is in the shared buffer") != NULL);
	CHECK(strstr(out, "freed the buffer, the MR,") != NULL);
	CHECK(strstr(out, "late import of the PD blob: RSHARE_E_NOT_FOUND, as expected") != NULL);
	CHECK(strstr(out, "all checks passed") != NULL);
	{ /* MR and DM: shared and checked by every worker where sim0 has them */
		rshare_device *d;
		uint32_t caps = 0;

		REQUIRE_OK(rshare_device_open("sim0", &d));
		REQUIRE_OK(rshare_device_caps(d, &caps));
		REQUIRE_OK(rshare_device_close(d));
		if (caps & RSHARE_CAP_MR)
			CHECK(count(out, ", MR keys 0x") == 4);
		else
			CHECK(strstr(out, "MRs cannot be shared here") && count(out, "no MR") == 4);
		if (caps & RSHARE_CAP_DM)
			CHECK(count(out, "read the parent's message from device memory") == 4);
		else
			CHECK(strstr(out, "device memory cannot be shared") &&
			      count(out, "no DM") == 4);
	}
	CHECK(run("%s demo --device no-such-device 2>&1", CLI) == 1);
	CHECK(strstr(out, "RSHARE_E_NODEV") && strstr(out, "no-such-device"));
	CHECK(run("%s demo --workers 0 2>&1", CLI) == 2);
}

/* inspect: text form, binary file, stdin, and bad input. */
static void case_inspect(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char text[RSHARE_TEXT_MAX], path[] = "/tmp/rshare-cli-XXXXXX";
	rshare_device *dev;
	rshare_pd *pd;
	size_t len, tlen;
	int fd;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);
	REQUIRE_OK(rshare_blob_to_text(blob, len, text, sizeof(text), &tlen));
	CHECK(run("%s inspect %s 2>&1", CLI, text) == 0);
	CHECK(strstr(out, "{\"format\":1,\"kind\":\"pd\",\"provider\":\"sim\"") != NULL);
	fd = mkstemp(path);
	REQUIRE(fd >= 0 && write(fd, blob, len) == (ssize_t)len);
	close(fd);
	CHECK(run("%s inspect %s 2>&1", CLI, path) == 0);
	CHECK(strstr(out, "\"kind\":\"pd\"") && strstr(out, "\"size\":44"));
	CHECK(run("%s inspect - < %s 2>&1", CLI, path) == 0);
	CHECK(strstr(out, "\"kind\":\"pd\"") != NULL);
	CHECK(run("echo %s | %s inspect - 2>&1", text, CLI) == 0);
	CHECK(strstr(out, "\"kind\":\"pd\"") != NULL);
	unlink(path);
	/* The 1.1 kinds (blobs as in tests/fuzz/seeds/mr_text and dm_text). */
	CHECK(run("%s inspect rshare:UlNIQgEDAgBUAAAAAAAAADAAAABR3sAC50g4ZMqAImgBAAAAAAAAAAAAAAAF"
		  "AAAAAQAAAAAAAAAAEAAAAH8AAAAQAAAAAAAANBIAAHhWAAAEDtSq 2>&1", CLI) == 0);
	CHECK(strstr(out, "\"kind\":\"mr\"") && strstr(out, "\"lkey\":4660") &&
	      strstr(out, "\"rkey\":22136") && strstr(out, "\"size\":84"));
	CHECK(run("%s inspect rshare:UlNIQgEEAgA0AAAAAAAAADAAAABR3sAC50g4ZMqAImgBAAAAAAAAAAAQAAAA"
		  "AAAA7Ov97A 2>&1", CLI) == 0);
	CHECK(strstr(out, "\"kind\":\"dm\"") && strstr(out, "\"length\":4096") &&
	      strstr(out, "\"size\":52"));
	CHECK(run("%s inspect rshare:AAAA 2>&1", CLI) == 1);
	CHECK(strstr(out, "RSHARE_E_BLOB_CORRUPT") != NULL);
	CHECK(run("%s inspect rshare:@@ 2>&1", CLI) == 1);
	CHECK(strstr(out, "RSHARE_E_INVAL") != NULL);
	CHECK(run("%s inspect /no/such/file 2>&1", CLI) == 1);
	CHECK(strstr(out, "/no/such/file") && strstr(out, "rshare:"));
	CHECK(run("%s inspect garbage 2>&1", CLI) == 1);
	CHECK(strstr(out, "garbage") && strstr(out, "expected") && strstr(out, "rshare:"));
	CHECK(run("%s inspect /etc 2>&1", CLI) == 1);
	CHECK(strstr(out, "/etc: is a directory") != NULL);
	CHECK(run("%s inspect /dev/null 2>&1", CLI) == 1);
	CHECK(strstr(out, "RSHARE_E_BLOB_CORRUPT") && strstr(out, "rshare:"));
	{
		/* Whitespace around the text form: argument, file and stdin. */
		char arg[RSHARE_TEXT_MAX + 16];

		snprintf(arg, sizeof(arg), "' \t%s \n'", text);
		CHECK(run("%s inspect %s 2>&1", CLI, arg) == 0);
		CHECK(strstr(out, "\"kind\":\"pd\"") != NULL);
		CHECK(run("printf '\\n  %s  \\n\\n' | %s inspect - 2>&1", text, CLI) == 0);
		CHECK(strstr(out, "\"kind\":\"pd\"") != NULL);
	}
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* The benchmark is its own program (rshare-bench), not a subcommand. */
static void case_bench_not_a_command(void)
{
	CHECK(run("%s bench 2>&1", CLI) == 2);
	CHECK(strstr(out, "unknown command") != NULL);
}

/* Usage errors. */
static void case_usage_errors(void)
{
	CHECK(run("%s 2>&1", CLI) == 2);
	CHECK(run("%s frobnicate 2>&1", CLI) == 2);
	CHECK(strstr(out, "unknown command") != NULL);
	CHECK(run("%s --help 2>&1", CLI) == 0);
	CHECK(run("%s version 2>&1", CLI) == 0);
	CHECK(strstr(out, "rshare 1.2.0") != NULL);
}

#define T_PROGRAM_test_cli ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, NULL)
