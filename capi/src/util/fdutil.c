/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "util/fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int rs_dup_cloexec(int fd)
{
	int r;

	do
		r = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

void rs_close_quietly(int fd)
{
	int saved = errno;

	if (fd >= 0)
		close(fd);
	errno = saved;
}
