/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Small fd helpers shared by the core and the providers. */
#ifndef RSHARE_UTIL_FDUTIL_H
#define RSHARE_UTIL_FDUTIL_H

#include <sys/socket.h>

/* dup(fd) with O_CLOEXEC, retrying EINTR; -1 + errno on failure. */
int rs_dup_cloexec(int fd);
/* close() that keeps errno intact, for cleanup paths. */
void rs_close_quietly(int fd);


/* Room for one SCM_RIGHTS fd, aligned as a cmsghdr. */
union rs_one_fd_cmsg {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int))];
};

/* Make msg carry fd (SCM_RIGHTS) in ctl, which must outlive the sendmsg. */
void rs_cmsg_attach_fd(struct msghdr *msg, union rs_one_fd_cmsg *ctl, int fd);
/* The same for n fds in ctl, of ctl_size >= CMSG_SPACE(n * sizeof(int))
 * bytes, aligned as a cmsghdr. */
void rs_cmsg_attach_fds(struct msghdr *msg, void *ctl, size_t ctl_size, const int *fds,
			size_t n);

/* Collect the SCM_RIGHTS fds a received msg carries into fds; returns how
 * many. Size the control buffer for max fds: the kernel then installs no
 * more (it sets MSG_CTRUNC instead), so none is left uncollected. */
int rs_cmsg_take_fds(struct msghdr *msg, int *fds, int max);

#endif
