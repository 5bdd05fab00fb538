/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Small fd helpers shared by the core and the providers. */
#ifndef RSHARE_UTIL_FDUTIL_H
#define RSHARE_UTIL_FDUTIL_H

#include <stdbool.h>
#include <sys/socket.h>

/* dup(fd) with O_CLOEXEC, retrying EINTR; -1 + errno on failure. */
int rs_dup_cloexec(int fd);
/* close() that keeps errno intact, for cleanup paths. */
void rs_close_quietly(int fd);

/* The most fds one message can carry (the kernel's SCM_MAX_FD): a control
 * buffer this large receives them all, so the kernel drops none on the
 * receiving thread (its last reference would be released there). */
#define RS_SCM_MAX_FD 253

/* Close an fd someone else sent (its close may block: FUSE, SO_LINGER)
 * on a closer thread (closer.c), keeping errno; on the caller's thread only
 * when CLOSER_QUEUE closes are pending. */
void rs_close_untrusted(int fd);
void rs_close_untrusted_all(const int *fds, int n);
/* Close a socket whose peer is not trusted: the fds still queued on it
 * would otherwise be released on this thread by close(); they are received
 * and handed to the closer first. */
void rs_close_socket_untrusted(int sock);
/* Could fd be a device context: a character device (verbs) or a memfd
 * that takes seals (sim0)? Asked without a round trip to the file's
 * filesystem, so a FUSE daemon cannot stall the question. */
bool rs_fd_may_be_device(int fd);
/* Free places in the closer's queue. */
size_t rs_closer_room(void);


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
