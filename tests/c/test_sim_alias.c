/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * VAR pages are never aliased. Process B (a fresh exec of this test) keeps
 * a mapping of VAR 1's page; A frees VAR 1 and allocates every VAR it can:
 * none gets that page (the last allocation is NOMEM, the page counting as
 * mapped), and B's writes through its old mapping never reach any new VAR.
 * Once B unmaps, or dies holding the mapping, the page is reused (zeroed).
 * Also within one process (a second, imported handle still mapped), through
 * fork inheritance (a child keeps the parent's mapping), and a map or an
 * import after the free is refused.
 */
#include <fcntl.h>

#include "sim_peer.h"

#define PAGE 4096

/* B: receive the device and VAR 1's blob, map it, then obey A. */
static int peer_b(int sock)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_var *var;
	size_t len;
	char cmd;
	void *a;

	if (rshare_channel_recv(sock, &dev, blob, sizeof(blob), &len) ||
	    rshare_var_import(dev, blob, len, &var) || rshare_var_map(var, &a))
		return 1;
	memset(a, 0xb1, PAGE);
	if (write(sock, "M", 1) != 1)
		return 1;
	while (read(sock, &cmd, 1) == 1) {
		if (cmd == 'W') { /* write through the old mapping */
			memset(a, 0xb2, PAGE);
		} else if (cmd == 'U') { /* unmap and release */
			if (rshare_var_unmap(var) || rshare_var_unimport(var))
				return 1;
		} else if (cmd == 'R') { /* import VAR 1 after its free */
			rshare_var *again;

			cmd = rshare_var_import(dev, blob, len, &again) == RSHARE_E_NOT_FOUND ?
				      'R' : 'x';
		}
		if (write(sock, &cmd, 1) != 1)
			return 1;
	}
	return 0;
}

static pid_t spawn_b(int *sock)
{
	const char *self = getenv("RSHARE_TEST_HELPER");
	int sv[2];
	pid_t pid;

	REQUIRE(self != NULL);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char arg[16];

		close(sv[0]);
		snprintf(arg, sizeof(arg), "%d", sv[1]);
		execl(self, self, "peer", arg, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

static void ask(int sock, char cmd)
{
	char r;

	REQUIRE(write(sock, &cmd, 1) == 1);
	REQUIRE(read(sock, &r, 1) == 1);
	CHECK(r == cmd);
}

static bool all_bytes(const void *p, unsigned char v)
{
	for (int i = 0; i < PAGE; i++)
		if (((const unsigned char *)p)[i] != v)
			return false;
	return true;
}

static uint32_t page_of(rshare_var *v)
{
	uint32_t p = UINT32_MAX;

	CHECK_OK(rshare_var_attrs(v, &p, NULL, NULL));
	return p;
}

/* Allocate every VAR A can get; none may be on page banned. */
static int alloc_all(rshare_device *dev, rshare_var **vars, uint32_t banned)
{
	int n = 0;

	while (n < (int)SIM_VAR_PAGES && rshare_var_alloc(dev, 0, &vars[n]) == RSHARE_OK) {
		void *a;

		CHECK(page_of(vars[n]) != banned);
		CHECK_OK(rshare_var_map(vars[n], &a));
		CHECK(all_bytes(a, 0));
		n++;
	}
	return n;
}

static void free_all(rshare_var **vars, int n)
{
	while (n--)
		CHECK_OK(rshare_var_free(vars[n]));
}

/* What every case starts from (one fixture, made for each case). */
static unsigned char blob[RSHARE_BLOB_MAX];
static rshare_var *vars[SIM_VAR_PAGES], *v1, *imp;
static rshare_device *dev;
static uint32_t p1;
static size_t len;
static int sock, n;
static pid_t b;
static void *a;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
}

static void teardown(void)
{
	CHECK_OK(rshare_device_close(dev));
}

/* 1. Another process keeps the old mapping. */
static void case_peer_keeps_old_mapping(void)
{
	REQUIRE_OK(rshare_var_alloc(dev, 0, &v1));
	p1 = page_of(v1);
	len = export_var(v1, blob);
	b = spawn_b(&sock);
	REQUIRE_OK(rshare_channel_send(sock, dev, blob, len));
	{
		char r;
		REQUIRE(read(sock, &r, 1) == 1 && r == 'M');
	}
	CHECK_OK(rshare_var_map(v1, &a));
	CHECK(all_bytes(a, 0xb1)); /* B's writes reach VAR 1, as they should */
	CHECK_OK(rshare_var_free(v1));
	n = alloc_all(dev, vars, p1);
	CHECK(n == (int)SIM_VAR_PAGES - 1);
	CHECK_ST(rshare_var_alloc(dev, 0, &v1), RSHARE_E_NOMEM);
	CHECK_MSG("still mapped");
	ask(sock, 'W');
	for (int i = 0; i < n; i++) {
		CHECK_OK(rshare_var_map(vars[i], &a));
		CHECK(all_bytes(a, 0)); /* B's writes reached no new VAR */
	}
	/* B unmaps: the page is free again, and clean. */
	ask(sock, 'U');
	CHECK_OK(rshare_var_alloc(dev, 0, &v1));
	CHECK(page_of(v1) == p1);
	CHECK_OK(rshare_var_map(v1, &a));
	CHECK(all_bytes(a, 0));
	ask(sock, 'R'); /* B's blob and handle of the freed VAR 1: refused */
	CHECK_OK(rshare_var_free(v1));
	free_all(vars, n);
	close(sock);
	waitpid(b, NULL, 0);
}

/* 2. B dies holding a mapping: the kernel drops its lock, the page
 * comes back. */
static void case_peer_dies_holding_mapping(void)
{
	REQUIRE_OK(rshare_var_alloc(dev, 0, &v1));
	p1 = page_of(v1);
	len = export_var(v1, blob);
	b = spawn_b(&sock);
	REQUIRE_OK(rshare_channel_send(sock, dev, blob, len));
	{
		char r;
		REQUIRE(read(sock, &r, 1) == 1 && r == 'M');
	}
	CHECK_OK(rshare_var_free(v1));
	n = alloc_all(dev, vars, p1);
	CHECK(n == (int)SIM_VAR_PAGES - 1);
	free_all(vars, n);
	kill_peer(b);
	close(sock);
	n = alloc_all(dev, vars, UINT32_MAX);
	CHECK(n == (int)SIM_VAR_PAGES);
	free_all(vars, n);
}

/* 3. Within one process: a second handle still maps the page. */
static void case_second_handle_maps_page(void)
{
	REQUIRE_OK(rshare_var_alloc(dev, 0, &v1));
	p1 = page_of(v1);
	len = export_var(v1, blob);
	REQUIRE_OK(rshare_var_import(dev, blob, len, &imp));
	CHECK_OK(rshare_var_map(imp, &a));
	CHECK_OK(rshare_var_free(v1));
	n = alloc_all(dev, vars, p1);
	CHECK(n == (int)SIM_VAR_PAGES - 1);
	free_all(vars, n);
	/* Unmapped, the handle of a freed VAR cannot map its page again. */
	CHECK_OK(rshare_var_unmap(imp));
	CHECK_ST(rshare_var_map(imp, &a), RSHARE_E_IO);
	CHECK_MSG("freed");
	CHECK_OK(rshare_var_unimport(imp));
	n = alloc_all(dev, vars, UINT32_MAX);
	CHECK(n == (int)SIM_VAR_PAGES);
	free_all(vars, n);
}

/* 4. A forked child inherits a mapping: it counts as its own. */
static void case_forked_child_mapping(void)
{
	REQUIRE_OK(rshare_var_alloc(dev, 0, &v1));
	p1 = page_of(v1);
	CHECK_OK(rshare_var_map(v1, &a));
	{
		int go[2];
		char c;
		pid_t child;

		REQUIRE(pipe(go) == 0);
		child = fork();
		REQUIRE(child >= 0);
		if (child == 0) {
			close(go[1]);
			if (read(go[0], &c, 1) == 1)
				memset(a, 0xc3, PAGE); /* through the inherited mapping */
			_exit(0);
		}
		close(go[0]);
		CHECK_OK(rshare_var_free(v1)); /* also unmaps it here */
		n = alloc_all(dev, vars, p1);
		CHECK(n == (int)SIM_VAR_PAGES - 1);
		REQUIRE(write(go[1], "w", 1) == 1);
		close(go[1]);
		waitpid(child, NULL, 0);
		for (int i = 0; i < n; i++) {
			CHECK_OK(rshare_var_map(vars[i], &a));
			CHECK(all_bytes(a, 0));
		}
		free_all(vars, n);
	}
	n = alloc_all(dev, vars, UINT32_MAX);
	CHECK(n == (int)SIM_VAR_PAGES);
	free_all(vars, n);
}

#define T_PROGRAM_test_sim_alias ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "peer"))
		return peer_b(atoi(argv[2]));
	return T_RUN(setup, teardown, argc, argv);
}
