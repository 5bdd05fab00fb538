/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Real cross-process sharing on the simulated device:
 *  - exec'd children get the device fd over the channel, import a PD and a
 *    VAR, write through the VAR page, and the parent sees every write;
 *  - the parent frees, the child's import then fails with NOT_FOUND while
 *    its unimport of the earlier import still succeeds;
 *  - a child frees, the parent's import fails with NOT_FOUND;
 *  - a forked child shares by plain fd inheritance.
 * The child is this same binary, started with "child SOCK".
 */
#include <inttypes.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

struct msg { /* what a child reports back */
	int import_st, handle_ok, write_done, late_import_st, unimport_st, free_st;
};

static void put_line(int sock, const char *s)
{
	if (send(sock, s, strlen(s) + 1, MSG_NOSIGNAL) < 0)
		exit(3);
}

static void get_line(int sock, char *buf, size_t cap)
{
	ssize_t n = recv(sock, buf, cap - 1, 0);
	if (n <= 0)
		exit(3);
	buf[n] = '\0';
}

/* The child's side. Payload: "<pd handle> <id> <pd text> <var text>". */
static int child(int sock)
{
	char payload[512], pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX], cmd[64];
	unsigned char pd_blob[RSHARE_BLOB_MAX], var_blob[RSHARE_BLOB_MAX];
	struct msg m = { 0 };
	rshare_device *dev;
	rshare_pd *pd, *late;
	rshare_var *var;
	size_t len, pd_len, var_len;
	uint32_t want, h;
	int id;
	void *page;

	if (rshare_channel_recv(sock, &dev, payload, sizeof(payload) - 1, &len))
		return 10;
	payload[len] = '\0';
	if (sscanf(payload, "%" SCNu32 " %d %179s %179s", &want, &id, pd_text, var_text) != 4)
		return 11;
	if (rshare_blob_from_text(pd_text, pd_blob, sizeof(pd_blob), &pd_len) ||
	    rshare_blob_from_text(var_text, var_blob, sizeof(var_blob), &var_len))
		return 12;
	m.import_st = rshare_pd_import(dev, pd_blob, pd_len, &pd);
	if (!m.import_st)
		m.import_st = rshare_var_import(dev, var_blob, var_len, &var);
	if (m.import_st) {
		send(sock, &m, sizeof(m), 0);
		return 0;
	}
	m.handle_ok = rshare_pd_handle(pd, &h) == RSHARE_OK && h == want;
	if (rshare_var_map(var, &page) == RSHARE_OK) {
		((volatile uint32_t *)page)[16 + id] = 0xabc00000u | (uint32_t)getpid();
		m.write_done = 1;
	}
	send(sock, &m, sizeof(m), 0);

	/* Then do what the parent says. */
	get_line(sock, cmd, sizeof(cmd));
	if (!strcmp(cmd, "after-free")) {
		m.late_import_st = rshare_pd_import(dev, pd_blob, pd_len, &late);
		m.unimport_st = rshare_pd_unimport(pd);
		if (!m.unimport_st)
			m.unimport_st = rshare_var_unimport(var);
	} else if (!strcmp(cmd, "free")) {
		m.free_st = rshare_pd_free(pd);
		if (!m.free_st)
			m.free_st = rshare_var_free(var);
	}
	if (!rshare_device_close(dev))
		m.write_done |= 2; /* closed cleanly */
	send(sock, &m, sizeof(m), 0);
	return 0;
}

static pid_t spawn_exec(int *sock)
{
	int sv[2];
	char arg[16];
	pid_t pid;
	const char *self = getenv("RSHARE_TEST_HELPER");

	REQUIRE_OK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ? RSHARE_E_IO : 0);
	pid = fork();
	if (pid == 0) {
		int fd = dup(sv[1]); /* without CLOEXEC: survives exec */
		snprintf(arg, sizeof(arg), "%d", fd);
		execl(self ? self : "/proc/self/exe", "test_xproc", "child", arg, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

static int reaped_ok(pid_t pid)
{
	int ws;
	return waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

static void make_payload(char *out, size_t cap, rshare_pd *pd, rshare_var *var, int id)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX];
	size_t len, tlen;
	uint32_t h;

	len = export_pd(pd, blob);
	REQUIRE_OK(rshare_blob_to_text(blob, len, pd_text, sizeof(pd_text), &tlen));
	len = export_var(var, blob);
	REQUIRE_OK(rshare_blob_to_text(blob, len, var_text, sizeof(var_text), &tlen));
	REQUIRE_OK(rshare_pd_handle(pd, &h));
	snprintf(out, cap, "%" PRIu32 " %d %s %s", h, id, pd_text, var_text);
}

#define NCHILD 3

/* What every case starts from (one fixture, made for each case). */
static char payload[512];
static unsigned char blob[RSHARE_BLOB_MAX];
static rshare_device *dev;
static rshare_pd *pd, *imp;
static rshare_var *var;
static volatile uint32_t *page;
static void *addr;
static struct msg m;
static pid_t pids[NCHILD];
static int socks[NCHILD], fd;
static size_t len;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
}

static void teardown(void)
{
	CHECK_OK(rshare_device_close(dev));
}

/* 1. Exec'd children over the channel; the parent sees their writes. */
static void case_exec_children_over_channel(void)
{
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	REQUIRE_OK(rshare_var_map(var, &addr));
	page = addr;
	for (int i = 0; i < NCHILD; i++) {
		pids[i] = spawn_exec(&socks[i]);
		make_payload(payload, sizeof(payload), pd, var, i);
		CHECK_OK(rshare_channel_send(socks[i], dev, payload, strlen(payload)));
	}
	for (int i = 0; i < NCHILD; i++) {
		CHECK(recv(socks[i], &m, sizeof(m), 0) == sizeof(m));
		CHECK_ST(m.import_st, RSHARE_OK);
		CHECK(m.handle_ok == 1);
		CHECK(m.write_done == 1);
		CHECK(page[16 + i] == (0xabc00000u | (uint32_t)pids[i]));
	}
	/* 2. The parent frees both; the children's late import says
	 * NOT_FOUND, their unimports still work. */
	len = export_pd(pd, blob);
	CHECK_OK(rshare_var_unmap(var));
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_pd_free(pd));
	for (int i = 0; i < NCHILD; i++) {
		put_line(socks[i], "after-free");
		CHECK(recv(socks[i], &m, sizeof(m), 0) == sizeof(m));
		CHECK_ST(m.late_import_st, RSHARE_E_NOT_FOUND);
		CHECK_ST(m.unimport_st, RSHARE_OK);
		CHECK(m.write_done == 3);
		CHECK(reaped_ok(pids[i]));
		close(socks[i]);
	}
}

/* 3. A child frees; the parent's import then fails. */
static void case_child_frees(void)
{
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	pids[0] = spawn_exec(&socks[0]);
	make_payload(payload, sizeof(payload), pd, var, 0);
	CHECK_OK(rshare_channel_send(socks[0], dev, payload, strlen(payload)));
	CHECK(recv(socks[0], &m, sizeof(m), 0) == sizeof(m));
	CHECK_ST(m.import_st, RSHARE_OK);
	put_line(socks[0], "free");
	CHECK(recv(socks[0], &m, sizeof(m), 0) == sizeof(m));
	CHECK_ST(m.free_st, RSHARE_OK);
	CHECK(reaped_ok(pids[0]));
	close(socks[0]);
	len = export_pd(pd, blob);
	CHECK_ST(rshare_pd_import(dev, blob, len, &imp), RSHARE_E_NOT_FOUND);
	len = export_var(var, blob);
	CHECK_ST(rshare_var_import(dev, blob, len, (rshare_var **)&imp), RSHARE_E_NOT_FOUND);
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_OK(rshare_var_unimport(var));
}

/* 4. Plain fork inheritance: the child imports the inherited fd. */
static void case_fork_inherits_fd(void)
{
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);
	CHECK_OK(rshare_device_fd(dev, &fd));
	pids[0] = fork();
	if (pids[0] == 0) {
		rshare_device *cd;
		rshare_pd *cp;
		if (rshare_device_import(fd, &cd) || rshare_pd_import(cd, blob, len, &cp) ||
		    rshare_pd_free(cp) || rshare_device_close(cd))
			_exit(1);
		_exit(0);
	}
	CHECK(reaped_ok(pids[0]));
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_pd_unimport(pd));
}

#define T_PROGRAM_test_xproc ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "child"))
		return child(atoi(argv[2]));
	return T_RUN(setup, teardown, argc, argv);
}
