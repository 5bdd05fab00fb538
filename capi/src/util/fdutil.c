/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "util/fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
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

static void attach(struct msghdr *msg, char *buf, size_t cap, const int *fds, int n)
{
	struct cmsghdr *cm;

	memset(buf, 0, cap);
	msg->msg_control = buf;
	msg->msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
}

void rs_cmsg_attach_fd(struct msghdr *msg, union rs_one_fd_cmsg *ctl, int fd)
{
	attach(msg, ctl->buf, sizeof(ctl->buf), &fd, 1);
}

void rs_cmsg_attach_fds(struct msghdr *msg, union rs_dev_fds_cmsg *ctl, const int *fds,
			int n)
{
	attach(msg, ctl->buf, sizeof(ctl->buf), fds, n);
}

int rs_cmsg_take_fds(struct msghdr *msg, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n < max; i++)
			memcpy(&fds[n++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	return n;
}
