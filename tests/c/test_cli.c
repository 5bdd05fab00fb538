/*
 * The `rshare` command, run as a user would: every subcommand, its output
 * and its exit status, including the error paths. RSHARE_CLI names the
 * binary (set by ctest).
 */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static char out[1 << 16];

/* Run a shell command line; capture stdout+stderr into out; exit status. */
static int run(const char *fmt, const char *arg)
{
	char cmd[1024];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), fmt, getenv("RSHARE_CLI"), arg ? arg : "");
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

int main(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char text[RSHARE_TEXT_MAX], path[] = "/tmp/rshare-cli-XXXXXX";
	rshare_device *dev;
	rshare_pd *pd;
	size_t len, tlen, n;
	int fd;

	REQUIRE(getenv("RSHARE_CLI") != NULL);

	CHECK(run("%s devices 2>&1", NULL) == 0);
	CHECK(strstr(out, "sim0") && strstr(out, " sim\n"));
	CHECK(run("%s devices --json 2>&1", NULL) == 0);
	CHECK(out[0] == '[' && strstr(out, "{\"name\":\"sim0\",\"guid\":\"0x") &&
	      strstr(out, "\"provider\":\"sim\"}]"));
	REQUIRE_OK(rshare_devices_count(&n));
	if (n == 1) { /* no hardware here: hiding sim0 leaves nothing */
		CHECK(run("RSHARE_SIM=0 %s devices 2>&1", NULL) == 0);
		CHECK(strstr(out, "no devices") != NULL);
		CHECK(run("RSHARE_SIM=0 %s demo 2>&1", NULL) == 1);
		CHECK(strstr(out, "RSHARE_E_NODEV") != NULL);
	}

	/* The demo: four workers, every check passed, the late import. */
	CHECK(run("%s demo --workers 4 2>&1", NULL) == 0);
	CHECK(count(out, "): imported PD 0 and VAR page 0, wrote slot") == 4);
	CHECK(strstr(out, "checked: every worker's write is in the shared VAR page") != NULL);
	CHECK(strstr(out, "late import of the PD blob: RSHARE_E_NOT_FOUND, as expected") != NULL);
	CHECK(strstr(out, "all checks passed") != NULL);
	CHECK(run("%s demo --device no-such-device 2>&1", NULL) == 1);
	CHECK(strstr(out, "RSHARE_E_NODEV") && strstr(out, "no-such-device"));
	CHECK(run("%s demo --workers 0 2>&1", NULL) == 2);

	/* inspect: text form, binary file, stdin, and bad input. */
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);
	REQUIRE_OK(rshare_blob_to_text(blob, len, text, sizeof(text), &tlen));
	CHECK(run("%s inspect %s 2>&1", text) == 0);
	CHECK(strstr(out, "{\"format\":1,\"kind\":\"pd\",\"provider\":\"sim\"") != NULL);
	fd = mkstemp(path);
	REQUIRE(fd >= 0 && write(fd, blob, len) == (ssize_t)len);
	close(fd);
	CHECK(run("%s inspect %s 2>&1", path) == 0);
	CHECK(strstr(out, "\"kind\":\"pd\"") && strstr(out, "\"size\":44"));
	CHECK(run("%s inspect - < %s 2>&1", path) == 0);
	CHECK(strstr(out, "\"kind\":\"pd\"") != NULL);
	{
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "echo %s | %%s inspect - 2>&1%%s", text);
		CHECK(run(cmd, NULL) == 0);
		CHECK(strstr(out, "\"kind\":\"pd\"") != NULL);
	}
	unlink(path);
	CHECK(run("%s inspect rshare:AAAA 2>&1", NULL) == 1);
	CHECK(strstr(out, "RSHARE_E_BLOB_CORRUPT") != NULL);
	CHECK(run("%s inspect rshare:@@ 2>&1", NULL) == 1);
	CHECK(strstr(out, "RSHARE_E_INVAL") != NULL);
	CHECK(run("%s inspect /no/such/file 2>&1", NULL) == 1);

	/* bench runs and prints every line (its numbers are for people). */
	CHECK(run("%s bench 2>&1", NULL) == 0);
	CHECK(strstr(out, "pd alloc") && strstr(out, "var free") &&
	      strstr(out, "share 1000 blobs"));

	/* Usage errors. */
	CHECK(run("%s 2>&1", NULL) == 2);
	CHECK(run("%s frobnicate 2>&1", NULL) == 2);
	CHECK(strstr(out, "unknown command") != NULL);
	CHECK(run("%s --help 2>&1", NULL) == 0);
	CHECK(run("%s version 2>&1", NULL) == 0);
	CHECK(strstr(out, "rshare 1.0.0") != NULL);

	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
	TEST_DONE();
}
