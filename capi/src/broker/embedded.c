/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The embedded broker: the serving loop (server.c) on a thread of the
 * owning process, behind a generation-checked handle. `rshare serve` is this
 * too, with the main thread waiting for SIGTERM or SIGINT.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blob.h"
#include "util/copyout.h"
#include "broker.h"
#include "internal.h"
#include "rshare/rshare.h"
#include "util/error.h"

struct embedded {
	struct rsb_server *srv;
	pthread_t thread;
	pid_t pid; /* the process whose thread serves */
};

static void *serve_thread(void *arg)
{
	rsb_server_run(arg);
	return NULL;
}

int rshare_broker_start(const char *endpoint, rshare_broker **broker)
{
	struct rsb_listener l;
	struct embedded *e;
	struct rs_slot *slot;
	sigset_t all, old;
	int status, err;

	if (!broker)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "broker is NULL"));
	status = rsb_listen(endpoint, &l);
	if (status)
		RS_RETURN(status);
	e = calloc(1, sizeof(*e));
	if (!e) {
		rsb_unlisten(&l);
		RS_RETURN(rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a broker"));
	}
	status = rsb_server_new(&l, &e->srv);
	if (status) {
		rsb_unlisten(&l);
		free(e);
		RS_RETURN(status);
	}
	status = rs_slot_reserve(&slot);
	if (status) {
		rsb_server_free(e->srv);
		free(e);
		RS_RETURN(status);
	}
	/* The thread blocks every signal: they stay the application's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&e->thread, NULL, serve_thread, e->srv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		rs_slot_discard(slot);
		rsb_server_free(e->srv);
		free(e);
		RS_RETURN(rs_fail(RSHARE_E_NOMEM, err, "cannot start the broker thread"));
	}
	e->pid = getpid();
	slot->u.any = e;
	*broker = rs_slot_publish(slot, RS_OBJ_BROKER);
	return RSHARE_OK;
}

int rshare_broker_stop(rshare_broker *broker)
{
	struct rs_slot *slot;
	struct embedded *e;
	int status = rs_retire_begin(broker, RS_OBJ_BROKER, &slot);

	if (status)
		RS_RETURN(status);
	e = slot->u.any;
	if (e->pid == getpid()) {
		rsb_client_forget(rsb_server_path(e->srv));
		rsb_server_wake(e->srv);
		pthread_join(e->thread, NULL);
		rsb_server_free(e->srv);
	}
	/* In a forked child the thread does not exist and the socket is the
	 * parent's: leave both alone. */
	rs_retire_commit(slot);
	free(e);
	return RSHARE_OK;
}

int rshare_broker_endpoint(const rshare_broker *broker, char *buf, size_t cap, size_t *len)
{
	struct rs_slot *slot;
	const char *path;
	int status;

	if (!len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is NULL"));
	status = rs_pin(broker, RS_OBJ_BROKER, &slot);
	if (status)
		RS_RETURN(status);
	path = rsb_server_path(((struct embedded *)slot->u.any)->srv);
	status = rs_copy_str(path, strlen(path), buf, cap, len);
	rs_unpin(slot);
	RS_RETURN(status);
}

int rshare_broker_default_endpoint(char *buf, size_t cap, size_t *len)
{
	char path[RSB_PATH_MAX];
	int status;

	if (!len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is NULL"));
	status = rsb_resolve(NULL, path);
	if (!status)
		status = rs_copy_str(path, strlen(path), buf, cap, len);
	RS_RETURN(status);
}
