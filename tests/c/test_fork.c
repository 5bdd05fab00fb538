/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What a forked child owns: the parent has a live PD (allocated and
 * imported), a mapped VAR, an MR and device memory; the child closes the
 * inherited device, which releases them in the child only, and the
 * parent's objects stay live and usable. Also a fork while another thread
 * of the parent is inside a call holding the device (a blocked
 * rshare_channel_send): the child can still close the device.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Run fn in a forked child; its exit status (0: all its checks passed). */
static int in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct objs {
	rshare_device *dev;
	rshare_pd *pd, *pd_imp;
	rshare_var *var;
	rshare_mr *mr;
	rshare_dm *dm;
	volatile uint32_t *page;
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t blen;
};

/* The child's side: its own checks count in its exit status. */
static int child_closes(void *arg)
{
	struct objs *o = arg;
	unsigned char out[RSHARE_BLOB_MAX];
	uint32_t handle;
	size_t len;
	rshare_pd *mine;

	/* Inherited handles work in the child until it lets go. */
	CHECK_OK(rshare_pd_handle(o->pd, &handle));
	CHECK(o->page[0] == 0x5eed);
	/* An object the child made itself keeps the device busy. */
	CHECK_OK(rshare_pd_import(o->dev, o->blob, o->blen, &mine));
	CHECK_ST(rshare_device_close(o->dev), RSHARE_E_BUSY);
	/* ... the inherited ones are gone by then (released locally). */
	CHECK_ST(rshare_pd_handle(o->pd, &handle), RSHARE_E_STALE);
	CHECK_OK(rshare_pd_unimport(mine));
	CHECK_OK(rshare_device_close(o->dev));
	CHECK_ST(rshare_pd_export(o->pd, out, sizeof(out), &len), RSHARE_E_STALE);
	CHECK_ST(rshare_pd_unimport(o->pd_imp), RSHARE_E_STALE);
	CHECK_ST(rshare_var_unimport(o->var), RSHARE_E_STALE);
	CHECK_ST(rshare_mr_dereg(o->mr), RSHARE_E_STALE);
	CHECK_ST(rshare_dm_free(o->dm), RSHARE_E_STALE);
	CHECK_ST(rshare_device_close(o->dev), RSHARE_E_STALE);
	return t_fail ? 1 : 0;
}

static void parent_objects_live(struct objs *o)
{
	unsigned char blob[RSHARE_BLOB_MAX], data[8] = { 0 };
	rshare_pd *again;
	uint32_t handle;
	size_t len;

	/* The objects were not freed: usable, importable, mapped. */
	CHECK_OK(rshare_pd_handle(o->pd, &handle));
	CHECK_OK(rshare_pd_handle(o->pd_imp, &handle));
	CHECK_OK(rshare_pd_import(o->dev, o->blob, o->blen, &again));
	CHECK_OK(rshare_pd_unimport(again));
	CHECK(o->page[0] == 0x5eed);
	o->page[1] = 7;
	CHECK(o->page[1] == 7);
	CHECK_OK(rshare_var_export(o->var, blob, sizeof(blob), &len));
	CHECK_OK(rshare_mr_export(o->mr, blob, sizeof(blob), &len));
	CHECK_OK(rshare_dm_write(o->dm, 0, "parent", 6));
	CHECK_OK(rshare_dm_read(o->dm, 0, data, 6));
	CHECK(memcmp(data, "parent", 6) == 0);
}

static void case_inherited_objects(void)
{
	static char region[4096] __attribute__((aligned(4096)));
	struct objs o;
	void *addr;

	REQUIRE_OK(rshare_device_open("sim0", &o.dev));
	REQUIRE_OK(rshare_pd_alloc(o.dev, &o.pd));
	o.blen = export_pd(o.pd, o.blob);
	REQUIRE_OK(rshare_pd_import(o.dev, o.blob, o.blen, &o.pd_imp));
	REQUIRE_OK(rshare_var_alloc(o.dev, 0, &o.var));
	REQUIRE_OK(rshare_var_map(o.var, &addr));
	o.page = addr;
	o.page[0] = 0x5eed;
	REQUIRE_OK(rshare_mr_reg(o.pd, region, sizeof(region), RSHARE_ACCESS_LOCAL_WRITE, &o.mr));
	REQUIRE_OK(rshare_dm_alloc(o.dev, 64, &o.dm));

	CHECK(in_child(child_closes, &o) == 0);
	parent_objects_live(&o);
	/* Twice: a second child of the same parent behaves the same. */
	CHECK(in_child(child_closes, &o) == 0);
	parent_objects_live(&o);

	CHECK_OK(rshare_dm_free(o.dm));
	CHECK_OK(rshare_mr_dereg(o.mr));
	CHECK_OK(rshare_var_free(o.var));
	CHECK_OK(rshare_pd_unimport(o.pd_imp));
	CHECK_OK(rshare_pd_free(o.pd));
	CHECK_OK(rshare_device_close(o.dev));
}

/* A thread blocked in rshare_channel_send holds a pin on the device. */
struct sender {
	rshare_device *dev;
	int sock;
	int status;
};

static void *send_big(void *arg)
{
	static unsigned char payload[RSHARE_PAYLOAD_MAX];
	struct sender *s = arg;

	s->status = rshare_channel_send(s->sock, s->dev, payload, sizeof(payload));
	return NULL;
}

static int child_closes_busy_device(void *arg)
{
	rshare_device *dev = arg;

	/* In the parent the sender's pin makes this BUSY; the sender does
	 * not exist here. */
	CHECK_OK(rshare_device_close(dev));
	return t_fail ? 1 : 0;
}

static void case_fork_during_a_call(void)
{
	static unsigned char sink[RSHARE_PAYLOAD_MAX + 64];
	struct sender s = { 0 };
	rshare_device *got;
	pthread_t th;
	size_t len;
	int sv[2], small = 4096;

	REQUIRE_OK(rshare_device_open("sim0", &s.dev));
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	s.sock = sv[0];
	REQUIRE(pthread_create(&th, NULL, send_big, &s) == 0);
	/* Wait until the sender is inside the call (device pinned): its first
	 * bytes arrive, the rest cannot fit the socket's buffers. */
	for (int i = 0, n = 0; i < 2000 && n == 0; i++) {
		usleep(1000);
		REQUIRE(ioctl(sv[1], FIONREAD, &n) == 0);
	}
	usleep(20000);
	CHECK_ST(rshare_device_close(s.dev), RSHARE_E_BUSY);

	CHECK(in_child(child_closes_busy_device, s.dev) == 0);

	/* Let the parent's sender finish: the message arrives whole. */
	CHECK_OK(rshare_channel_recv(sv[1], &got, sink, sizeof(sink), &len));
	pthread_join(th, NULL);
	CHECK_OK(s.status);
	CHECK(len == RSHARE_PAYLOAD_MAX);
	CHECK_OK(rshare_device_close(got));
	CHECK_OK(rshare_device_close(s.dev));
	close(sv[0]);
	close(sv[1]);
}

#define T_PROGRAM_test_fork ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(NULL, NULL)
