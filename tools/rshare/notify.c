/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* systemd's readiness protocol (sd_notify(3)), written out so that rshare
 * needs no libsystemd: one datagram with "VAR=value" lines to the AF_UNIX
 * socket $NOTIFY_SOCKET names (a path, or "@name" for the abstract
 * namespace). Nothing to do when it is unset. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

int cli_sd_notify(const char *state)
{
	const char *where = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = where ? strlen(where) : 0;
	socklen_t len;
	ssize_t r;
	int s;

	if (!where)
		return 0;
	if ((where[0] != '/' && where[0] != '@') || n < 2 || n >= sizeof(sa.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(sa.sun_path, where, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract: the name is the n bytes after the NUL */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (where[0] == '/'));
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	do
		r = sendto(s, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	while (r < 0 && errno == EINTR);
	close(s);
	return r < 0 ? -1 : 0;
}
