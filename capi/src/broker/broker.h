/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker's internals: where its socket lives (endpoint.c), the serving
 * loop (server.c) and its policy (policy.h), shared by the embedded broker (embedded.c) and, through
 * it, `rshare serve`. The client calls are in client.c.
 */
#ifndef RSHARE_BROKER_BROKER_H
#define RSHARE_BROKER_BROKER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

#define RSB_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

/* The socket path for endpoint (NULL: the default). RSHARE_E_INVAL when it
 * is empty or too long. */
int rsb_resolve(const char *endpoint, char path[RSB_PATH_MAX]);

/* Milliseconds on CLOCK_MONOTONIC: the broker's and its clients' deadlines. */
static inline uint64_t rsb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A connected client socket (SOCK_SEQPACKET, close-on-exec, blocking).
 * RSHARE_E_IO with errno ENOENT or ECONNREFUSED when no broker listens
 * there, and with ETIMEDOUT when its queue of connections stays full (a
 * stopped or stuck broker accepts none) for wait_ms (0: one attempt, which
 * never waits). Signals are waited through, within the bound. */
int rsb_connect(const char *endpoint, int wait_ms, int *fd);

/* Close this process's kept client connection to path, if any (a broker
 * stopping in this process). */
void rsb_client_forget(const char *path);

/* A listening socket and what the broker must undo when it stops. */
struct rsb_listener {
	int fd;
	int lock_fd;         /* flock held while the broker lives; -1 if none */
	char lock[RSB_PATH_MAX + 32]; /* the lock file's path, removed on a clean stop */
	bool owns_path;      /* false under systemd socket activation */
	dev_t dev;           /* identity of the socket file bound, to remove */
	ino_t ino;           /*   it only if it is still ours */
	char path[RSB_PATH_MAX];
};

/* Bind and listen (or take systemd's socket, endpoint NULL). */
int rsb_listen(const char *endpoint, struct rsb_listener *l);
void rsb_unlisten(struct rsb_listener *l);

struct rsb_server;

/* A server over l (taken: freed with the server). */
int rsb_server_new(const struct rsb_listener *l, struct rsb_server **out);
/* Serve until rsb_server_wake(); then every share is withdrawn. */
void rsb_server_run(struct rsb_server *s);
void rsb_server_wake(struct rsb_server *s);
const char *rsb_server_path(const struct rsb_server *s);
void rsb_server_free(struct rsb_server *s);

#endif
