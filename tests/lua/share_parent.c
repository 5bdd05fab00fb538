/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Cross-language, cross-process sharing test: a C parent owns a simulated
 * device, a PD and a VAR; Lua 5.4 and LuaJIT children import them and write
 * into the VAR page; the parent checks the writes.
 *
 *   usage: share_parent CHILD_SCRIPT INTERPRETER...
 *
 * Every interpreter is started twice: once receiving the device and binary
 * blobs over a socket (rshare.recv), once inheriting the device fd with the
 * text blobs in environment variables. Each child writes
 * "<n>:<mode>:<its Lua runtime>" at offset 64 * n of the page, then sends back (rshare.send) its device and
 * the blob of a PD it allocated and then let the garbage collector drop:
 * importing that blob here proves the child's finalizer did not destroy it.
 */
#include <rshare/rshare.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOT 64

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                     \
		if (!(cond)) {                                                       \
			fprintf(stderr, "share_parent: FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                    \
			fprintf(stderr, " [%s]\n", rshare_last_error());                 \
			failures++;                                                      \
		}                                                                    \
	} while (0)

/* Exit at once when a setup step fails: nothing after it can be checked. */
static void must(int status, const char *what)
{
	if (status != RSHARE_OK) {
		fprintf(stderr, "share_parent: %s: %s (%s)\n", what,
			rshare_status_name(status), rshare_last_error());
		exit(1);
	}
}

#define DM_BYTES 1024

struct shared {
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	unsigned char pd_blob[RSHARE_BLOB_MAX], var_blob[RSHARE_BLOB_MAX];
	size_t pd_len, var_len;
	char pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX];
	uint32_t pd_handle, var_page;
	unsigned char *page;
	/* Since 1.1: an MR on the PD and device memory, as text blobs in the
	 * environment (both modes); the children check the MR's keys, read
	 * the parent's line from the device memory and write theirs. */
	rshare_mr *mr;
	rshare_dm *dm;
	unsigned char mr_mem[4096];
	char mr_text[RSHARE_TEXT_MAX], dm_text[RSHARE_TEXT_MAX];
	uint32_t lkey, rkey;
};

static void set_env_num(const char *name, long value)
{
	char text[32];

	snprintf(text, sizeof(text), "%ld", value);
	setenv(name, text, 1);
}

/* In the child after fork: set up the environment and exec the script. */
static void exec_child(const struct shared *s, int sock, const char *interp,
		       const char *script, const char *mode, int slot)
{
	int devfd = -1;

	rshare_device_fd(s->dev, &devfd);
	if (strcmp(mode, "env") == 0) {
		/* dup() drops close-on-exec: the child inherits this fd. */
		set_env_num("RSHARE_TEST_DEV_FD", dup(devfd));
		setenv("RSHARE_TEST_PD", s->pd_text, 1);
		setenv("RSHARE_TEST_VAR", s->var_text, 1);
	}
	set_env_num("RSHARE_TEST_SOCK", sock);
	set_env_num("RSHARE_TEST_SLOT", slot);
	set_env_num("RSHARE_TEST_SLOT_SIZE", SLOT);
	set_env_num("RSHARE_TEST_PD_HANDLE", s->pd_handle);
	set_env_num("RSHARE_TEST_VAR_PAGE", s->var_page);
	setenv("RSHARE_TEST_MR", s->mr_text, 1);
	setenv("RSHARE_TEST_DM", s->dm_text, 1);
	set_env_num("RSHARE_TEST_MR_LKEY", s->lkey);
	set_env_num("RSHARE_TEST_MR_RKEY", s->rkey);
	execl(interp, interp, script, mode, (char *)NULL);
	perror("share_parent: exec");
	_exit(127);
}

/* Socket mode payload: the two binary blobs, each after a length byte. */
static size_t socket_payload(const struct shared *s, unsigned char *out)
{
	size_t n = 0;

	out[n++] = (unsigned char)s->pd_len;
	memcpy(out + n, s->pd_blob, s->pd_len);
	n += s->pd_len;
	out[n++] = (unsigned char)s->var_len;
	memcpy(out + n, s->var_blob, s->var_len);
	return n + s->var_len;
}

/* Receive the child's reply and check that its PD lives in our table. */
static void check_reply(const struct shared *s, int sock, const char *who)
{
	rshare_device *peer = NULL;
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len = 0;
	uint64_t mine = 0, theirs = 1;
	rshare_pd *pd = NULL;
	int st;

	st = rshare_channel_recv(sock, &peer, blob, sizeof(blob), &len);
	CHECK(st == RSHARE_OK, "%s: no reply: %s", who, rshare_status_name(st));
	if (st != RSHARE_OK)
		return;
	rshare_device_guid(s->dev, &mine);
	rshare_device_guid(peer, &theirs);
	CHECK(mine == theirs, "%s: the returned device has another GUID", who);
	st = rshare_pd_import(s->dev, blob, len, &pd);
	CHECK(st == RSHARE_OK, "%s: the child's PD (after its GC) does not import: %s", who,
	      rshare_status_name(st));
	if (st == RSHARE_OK)
		CHECK(rshare_pd_free(pd) == RSHARE_OK, "%s: free the child's PD", who);
	CHECK(rshare_device_close(peer) == RSHARE_OK, "%s: close the returned device", who);
}

static void run_child(const struct shared *s, const char *interp, const char *script,
		      const char *mode, int slot)
{
	char who[256];
	int sv[2], status = 0;
	pid_t pid;

	snprintf(who, sizeof(who), "%s %s (slot %d)", interp, mode, slot);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("share_parent: socketpair");
		exit(1);
	}
	fcntl(sv[0], F_SETFD, FD_CLOEXEC);
	pid = fork();
	if (pid < 0) {
		perror("share_parent: fork");
		exit(1);
	}
	if (pid == 0) {
		close(sv[0]);
		exec_child(s, sv[1], interp, script, mode, slot);
	}
	close(sv[1]);
	if (strcmp(mode, "socket") == 0) {
		unsigned char payload[2 + 2 * RSHARE_BLOB_MAX];
		size_t n = socket_payload(s, payload);

		CHECK(rshare_channel_send(sv[0], s->dev, payload, n) == RSHARE_OK,
		      "%s: send", who);
	}
	check_reply(s, sv[0], who);
	close(sv[0]);
	CHECK(waitpid(pid, &status, 0) == pid, "%s: waitpid", who);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child failed (status %d)", who,
	      status);
}

static void setup(struct shared *s)
{
	rshare_pd *pd;
	rshare_var *var;
	size_t n;

	must(rshare_device_open("sim0", &s->dev), "open sim0");
	must(rshare_pd_alloc(s->dev, &pd), "alloc PD");
	must(rshare_var_alloc(s->dev, 0, &var), "alloc VAR");
	must(rshare_pd_handle(pd, &s->pd_handle), "PD handle");
	must(rshare_var_attrs(var, &s->var_page, NULL, NULL), "VAR attrs");
	must(rshare_pd_export(pd, s->pd_blob, sizeof(s->pd_blob), &s->pd_len), "export PD");
	must(rshare_var_export(var, s->var_blob, sizeof(s->var_blob), &s->var_len), "export VAR");
	must(rshare_blob_to_text(s->pd_blob, s->pd_len, s->pd_text, sizeof(s->pd_text), &n),
	     "PD text");
	must(rshare_blob_to_text(s->var_blob, s->var_len, s->var_text, sizeof(s->var_text), &n),
	     "VAR text");
	must(rshare_var_map(var, (void **)&s->page), "map VAR");
	s->pd = pd;
	s->var = var;
	/* The children check that they see the parent's write, too. */
	memcpy(s->page, "parent-hello", 12);

	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len;

	must(rshare_mr_reg(pd, s->mr_mem, sizeof(s->mr_mem), RSHARE_ACCESS_LOCAL_WRITE, &s->mr),
	     "register an MR");
	must(rshare_mr_attrs(s->mr, NULL, NULL, &s->lkey, &s->rkey, NULL), "MR keys");
	must(rshare_mr_export(s->mr, blob, sizeof(blob), &len), "export MR");
	must(rshare_blob_to_text(blob, len, s->mr_text, sizeof(s->mr_text), &n), "MR text");
	must(rshare_dm_alloc(s->dev, DM_BYTES, &s->dm), "alloc DM");
	must(rshare_dm_write(s->dm, 0, "parent-dm", 9), "write DM");
	must(rshare_dm_export(s->dm, blob, sizeof(blob), &len), "export DM");
	must(rshare_blob_to_text(blob, len, s->dm_text, sizeof(s->dm_text), &n), "DM text");
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "socket", "env" };
	struct shared s;
	int slot = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: %s CHILD_SCRIPT INTERPRETER...\n", argv[0]);
		return 2;
	}
	memset(&s, 0, sizeof(s));
	setup(&s);

	for (int i = 2; i < argc; i++)
		for (int m = 0; m < 2; m++)
			run_child(&s, argv[i], argv[1], modes[m], slot++);

	/* Each child wrote "<slot>:<mode>:<runtime>" at its slot: we see it. */
	slot = 1;
	for (int i = 2; i < argc; i++)
		for (int m = 0; m < 2; m++, slot++) {
			const char *runtime = strstr(argv[i], "luajit") ? "LuaJIT" : "Lua 5.4";
			char want[SLOT];

			snprintf(want, sizeof(want), "%d:%s:%s", slot, modes[m], runtime);
			CHECK(memcmp(s.page + slot * SLOT, want, strlen(want) + 1) == 0,
			      "slot %d holds \"%.*s\", want \"%s\"", slot, SLOT - 1,
			      (const char *)s.page + slot * SLOT, want);
		}

	/* ... and in the device memory, at slot * SLOT. */
	slot = 1;
	for (int i = 2; i < argc; i++)
		for (int m = 0; m < 2; m++, slot++) {
			const char *runtime = strstr(argv[i], "luajit") ? "LuaJIT" : "Lua 5.4";
			char want[SLOT], got[SLOT];

			snprintf(want, sizeof(want), "dm %d:%s:%s", slot, modes[m], runtime);
			CHECK(rshare_dm_read(s.dm, (uint64_t)slot * SLOT, got, sizeof(got)) ==
				      RSHARE_OK && memcmp(got, want, strlen(want) + 1) == 0,
			      "device memory slot %d: want \"%s\"", slot, want);
		}

	CHECK(rshare_mr_dereg(s.mr) == RSHARE_OK, "deregister the parent's MR");
	CHECK(rshare_dm_free(s.dm) == RSHARE_OK, "free the parent's DM");
	CHECK(rshare_pd_free(s.pd) == RSHARE_OK, "free the parent's PD");
	CHECK(rshare_var_free(s.var) == RSHARE_OK, "free the parent's VAR");
	CHECK(rshare_device_close(s.dev) == RSHARE_OK, "close the parent's device");
	if (failures == 0)
		printf("share_parent: %d children imported, wrote and replied\n", slot - 1);
	return failures == 0 ? 0 : 1;
}
