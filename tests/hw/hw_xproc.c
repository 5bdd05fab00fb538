/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Sharing with another process: the parent sends its device fd and the
 * blobs over an rshare channel to a child (fork + exec of this program),
 * which imports them, uses them and destroys the PD for both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "hw_suite.h"

#define CHILD_SLOT 256 /* where the child writes in the VAR page */

int spawn_child(const struct hw_target *t, const char *mode, const char *extra_env,
		int *sock)
{
	char fdstr[16];
	int sv[2], pid;

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		/* Only the child's end crosses exec. */
		fcntl(sv[1], F_SETFD, 0);
		if (extra_env)
			putenv((char *)extra_env);
		snprintf(fdstr, sizeof(fdstr), "%d", sv[1]);
		execl(t->self, t->self, mode, fdstr, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

bool reap_child(int pid)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child %d ended with status 0x%x\n", pid, st);
		return false;
	}
	return true;
}

static void to_text(const unsigned char *blob, size_t len, char *text)
{
	size_t tlen;

	REQUIRE_OK(rshare_blob_to_text(blob, len, text, RSHARE_TEXT_MAX, &tlen));
}

void case_xproc(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX] = "-";
	char payload[1024], reply[64] = "";
	rshare_device *a = NULL;
	rshare_pd *pd, *late = NULL;
	rshare_var *var = NULL;
	char *page = NULL;
	uint32_t h = 0;
	size_t len = 0;
	int sock, pid, n;

	REQUIRE_OK(rshare_device_open(t->name, &a));
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_handle(pd, &h));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	to_text(blob, len, pd_text);
	if (t->var_sharing) {
		size_t vlen = 0;
		unsigned char vblob[RSHARE_BLOB_MAX];

		REQUIRE_OK(rshare_var_alloc(a, 0, &var));
		REQUIRE_OK(rshare_var_export(var, vblob, sizeof(vblob), &vlen));
		to_text(vblob, vlen, var_text);
		if (t->standin) {
			REQUIRE_OK(rshare_var_map(var, (void **)&page));
			snprintf(page, CHILD_SLOT, "parent %d", (int)getpid());
		}
	}
	/* "<pd handle> <may write VAR page> <pd blob> <var blob or ->" */
	n = snprintf(payload, sizeof(payload), "%u %d %s %s", h, page != NULL,
		     pd_text, var_text);

	pid = spawn_child(t, "child-share", NULL, &sock);
	CHECK_OK(rshare_channel_send(sock, a, payload, (size_t)n + 1));
	n = (int)read(sock, reply, sizeof(reply) - 1);
	close(sock);
	CHECK(reap_child(pid));
	CHECK(n > 0 && strncmp(reply, "done", 4) == 0);

	/* The child wrote its pid into the shared page... */
	if (page) {
		char want[64];
		snprintf(want, sizeof(want), "child %d", pid);
		CHECK(strcmp(page + CHILD_SLOT, want) == 0);
	}
	/* ...and destroyed the PD for this process too. */
	CHECK_ST(rshare_pd_import(a, blob, len, &late), RSHARE_E_NOT_FOUND);
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_unimport(pd));
	if (var)
		CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_device_close(a));
}

int child_share(int sock)
{
	char payload[1024], pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX];
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev = NULL;
	rshare_pd *pd = NULL;
	unsigned int h = 0;
	uint32_t got = ~0u;
	size_t len = 0;
	int writes = 0, prov = 0;

	REQUIRE_OK(rshare_channel_recv(sock, &dev, payload, sizeof(payload), &len));
	REQUIRE(len > 0 && payload[len - 1] == '\0');
	REQUIRE(sscanf(payload, "%u %d %179s %179s", &h, &writes, pd_text, var_text) == 4);
	CHECK_OK(rshare_device_provider(dev, &prov));
	CHECK(prov == RSHARE_PROVIDER_HW);

	REQUIRE_OK(rshare_blob_from_text(pd_text, blob, sizeof(blob), &len));
	CHECK_OK(rshare_pd_import(dev, blob, len, &pd));
	CHECK_OK(rshare_pd_handle(pd, &got));
	CHECK(got == h);

	if (strcmp(var_text, "-") != 0) {
		rshare_var *var = NULL;
		char *page = NULL;

		REQUIRE_OK(rshare_blob_from_text(var_text, blob, sizeof(blob), &len));
		CHECK_OK(rshare_var_import(dev, blob, len, &var));
		CHECK_OK(rshare_var_map(var, (void **)&page));
		if (writes && page) {
			char want[64];
			snprintf(want, sizeof(want), "parent %d", (int)getppid());
			CHECK(strcmp(page, want) == 0);
			snprintf(page + CHILD_SLOT, 64, "child %d", (int)getpid());
		}
		CHECK_OK(rshare_var_unimport(var));
	}
	CHECK_OK(rshare_pd_free(pd)); /* for every process */
	CHECK_OK(rshare_device_close(dev));
	CHECK(write(sock, "done\n", 5) == 5);
	printf("child %d: %d passed, %d failed\n", (int)getpid(), t_pass, t_fail);
	return t_fail ? 1 : 0;
}

int child_var63(int sock)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char text[RSHARE_TEXT_MAX + 1];
	rshare_device *dev = NULL;
	rshare_var *var = NULL;
	size_t len = 0, tlen = 0;

	REQUIRE_OK(rshare_channel_recv(sock, &dev, NULL, 0, &len));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	REQUIRE_OK(rshare_var_export(var, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_blob_to_text(blob, len, text, RSHARE_TEXT_MAX, &tlen));
	text[tlen] = '\n';
	CHECK(write(sock, text, tlen + 1) == (ssize_t)(tlen + 1));
	/* Released locally: the VAR lives on in the parent's table. */
	CHECK_OK(rshare_var_unimport(var));
	CHECK_OK(rshare_device_close(dev));
	return t_fail ? 1 : 0;
}

/*
 * MR, device memory and a VAR across processes. The child: cannot free the
 * parent's PD while the parent's MR is on it (the kernel's EBUSY), imports
 * the MR into the PD and finds the parent's keys, reads what the parent
 * wrote into the device memory and writes back, and frees the VAR for both
 * processes, after which the parent's free is refused with a status rather
 * than reaching rdma-core's assert.
 */
void case_xproc_mr_dm(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char pd_text[RSHARE_TEXT_MAX], mr_text[RSHARE_TEXT_MAX], dm_text[RSHARE_TEXT_MAX];
	char var_text[RSHARE_TEXT_MAX] = "-", payload[1024], reply[64] = "", got[64] = "";
	char want[64], *buf = calloc(1, 4096);
	rshare_device *a = NULL;
	rshare_pd *pd;
	rshare_mr *mr;
	rshare_dm *dm;
	rshare_var *var = NULL;
	uint32_t lkey, rkey;
	size_t len;
	int sock, pid, n;

	REQUIRE(buf);
	REQUIRE_OK(rshare_device_open(t->name, &a));
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	to_text(blob, len, pd_text);
	REQUIRE_OK(rshare_mr_reg(pd, buf, 4096, RSHARE_ACCESS_LOCAL_WRITE |
				 RSHARE_ACCESS_REMOTE_WRITE, &mr));
	REQUIRE_OK(rshare_mr_attrs(mr, NULL, NULL, &lkey, &rkey, NULL));
	REQUIRE_OK(rshare_mr_export(mr, blob, sizeof(blob), &len));
	to_text(blob, len, mr_text);
	REQUIRE_OK(rshare_dm_alloc(a, 512, &dm));
	/* Whole 4-byte words, as mlx5 device memory takes them. */
	memset(want, 0, sizeof(want));
	snprintf(want, sizeof(want), "parent %d", (int)getpid());
	REQUIRE_OK(rshare_dm_write(dm, 0, want, sizeof(want)));
	REQUIRE_OK(rshare_dm_export(dm, blob, sizeof(blob), &len));
	to_text(blob, len, dm_text);
	if (t->var_sharing) {
		REQUIRE_OK(rshare_var_alloc(a, 0, &var));
		REQUIRE_OK(rshare_var_export(var, blob, sizeof(blob), &len));
		to_text(blob, len, var_text);
	}
	/* "<lkey> <rkey> <pd blob> <mr blob> <dm blob> <var blob or ->" */
	n = snprintf(payload, sizeof(payload), "%u %u %s %s %s %s", lkey, rkey, pd_text,
		     mr_text, dm_text, var_text);

	pid = spawn_child(t, "child-mrdm", NULL, &sock);
	CHECK_OK(rshare_channel_send(sock, a, payload, (size_t)n + 1));
	n = (int)read(sock, reply, sizeof(reply) - 1);
	close(sock);
	CHECK(reap_child(pid));
	CHECK(n > 0 && strncmp(reply, "done", 4) == 0);

	snprintf(want, sizeof(want), "child %d", pid);
	CHECK_OK(rshare_dm_read(dm, 256, got, sizeof(got)));
	CHECK(strcmp(got, want) == 0);
	if (var) {
		CHECK_ST(rshare_var_free(var), RSHARE_E_NOT_FOUND);
		CHECK_OK(rshare_var_unimport(var));
	}
	CHECK_OK(rshare_dm_free(dm));
	CHECK_OK(rshare_mr_dereg(mr));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
	free(buf);
}

int child_mrdm(int sock)
{
	char payload[1024], pd_text[RSHARE_TEXT_MAX], mr_text[RSHARE_TEXT_MAX];
	char dm_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX], got[64] = "", want[64];
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev = NULL;
	rshare_pd *pd = NULL;
	rshare_mr *mr = NULL;
	rshare_dm *dm = NULL;
	unsigned int lkey = 0, rkey = 0;
	uint32_t l2 = 0, r2 = 0;
	size_t len = 0;

	REQUIRE_OK(rshare_channel_recv(sock, &dev, payload, sizeof(payload), &len));
	REQUIRE(len > 0 && payload[len - 1] == '\0');
	REQUIRE(sscanf(payload, "%u %u %179s %179s %179s %179s", &lkey, &rkey, pd_text,
		       mr_text, dm_text, var_text) == 6);

	REQUIRE_OK(rshare_blob_from_text(pd_text, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_pd_import(dev, blob, len, &pd));
	/* The parent's MR is on it: the kernel refuses to destroy it. */
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_BUSY);
	CHECK(rshare_last_errno() == EBUSY);
	REQUIRE_OK(rshare_blob_from_text(mr_text, blob, sizeof(blob), &len));
	CHECK_OK(rshare_mr_import(pd, blob, len, &mr));
	CHECK_OK(rshare_mr_attrs(mr, NULL, NULL, &l2, &r2, NULL));
	CHECK(l2 == lkey && r2 == rkey);
	CHECK_OK(rshare_mr_unimport(mr));
	CHECK_OK(rshare_pd_unimport(pd));

	REQUIRE_OK(rshare_blob_from_text(dm_text, blob, sizeof(blob), &len));
	CHECK_OK(rshare_dm_import(dev, blob, len, &dm));
	snprintf(want, sizeof(want), "parent %d", (int)getppid());
	CHECK_OK(rshare_dm_read(dm, 0, got, sizeof(got)));
	CHECK(strcmp(got, want) == 0);
	memset(want, 0, sizeof(want));
	snprintf(want, sizeof(want), "child %d", (int)getpid());
	CHECK_OK(rshare_dm_write(dm, 256, want, sizeof(want)));
	CHECK_OK(rshare_dm_unimport(dm));

	if (strcmp(var_text, "-") != 0) {
		rshare_var *var = NULL;

		REQUIRE_OK(rshare_blob_from_text(var_text, blob, sizeof(blob), &len));
		CHECK_OK(rshare_var_import(dev, blob, len, &var));
		CHECK_OK(rshare_var_free(var)); /* for every process */
	}
	CHECK_OK(rshare_device_close(dev));
	CHECK(write(sock, "done\n", 5) == 5);
	printf("child %d: %d passed, %d failed\n", (int)getpid(), t_pass, t_fail);
	return t_fail ? 1 : 0;
}
