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

void rs_cmsg_attach_fds(struct msghdr *msg, void *ctl, size_t ctl_size, const int *fds,
			size_t n)
{
	struct cmsghdr *cm;

	memset(ctl, 0, ctl_size);
	msg->msg_control = ctl;
	msg->msg_controllen = CMSG_SPACE(n * sizeof(int));
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
}

void rs_cmsg_attach_fd(struct msghdr *msg, union rs_one_fd_cmsg *ctl, int fd)
{
	rs_cmsg_attach_fds(msg, ctl->buf, sizeof(ctl->buf), &fd, 1);
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
