/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A one-file FUSE filesystem whose daemon never answers FLUSH, but for the
 * processes it is told to (the ones that open the file and pass it on):
 * close() of that file by anyone else waits for the daemon, uninterruptibly
 * once a fatal signal arrives (the kernel's fuse_flush is a forced request).
 * The daemon speaks the kernel's protocol (linux/fuse.h) on /dev/fuse
 * itself, no libfuse, and dies after FUSE_STALL_S seconds whatever happens,
 * which aborts the connection and ends every wait: a test against code
 * that closes such an fd where it must not is slow, never stuck.
 * Needs root (mount) and /dev/fuse.
 */
#ifndef RSHARE_TEST_FUSE_STALL_H
#define RSHARE_TEST_FUSE_STALL_H

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUSE_STALL_S 20
#define FUSE_STALL_ANSWER 8

struct fuse_stall {
	pid_t daemon;
	char mnt[128];
	pid_t *answer; /* shared: FLUSH from these pids is answered */
};

static void fuse_reply(int fd, uint64_t unique, int error, const void *body, size_t len)
{
	struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + len), .error = error,
				     .unique = unique };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };

	(void)!writev(fd, iov, len ? 2 : 1);
}

static void fuse_fill_attr(struct fuse_attr *a, uint64_t node)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->mode = node == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0666;
	a->nlink = node == FUSE_ROOT_ID ? 2 : 1;
	a->blksize = 4096;
}

static void fuse_serve(int fd, const pid_t *answer)
{
	static char buf[(1 << 20) + 4096];

	alarm(FUSE_STALL_S);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		bool answered = false;

		if (n < 0 && (errno == EINTR || errno == ENOENT || errno == EAGAIN))
			continue;
		if (n < (ssize_t)sizeof(*in))
			return;
		switch (in->opcode) {
		case FUSE_INIT: {
			struct fuse_init_in *ii = (struct fuse_init_in *)(in + 1);
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION, .minor = 31,
						   .max_readahead = ii->max_readahead,
						   .max_background = 16,
						   .congestion_threshold = 12,
						   .max_write = 4096, .time_gran = 1 };
			fuse_reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out e = { .nodeid = 2, .generation = 1,
						    .entry_valid = 3600, .attr_valid = 3600 };
			if (strcmp((char *)(in + 1), "f") != 0) {
				fuse_reply(fd, in->unique, -ENOENT, NULL, 0);
				break;
			}
			fuse_fill_attr(&e.attr, 2);
			fuse_reply(fd, in->unique, 0, &e, sizeof(e));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a = { .attr_valid = 3600 };
			fuse_fill_attr(&a.attr, in->nodeid);
			fuse_reply(fd, in->unique, 0, &a, sizeof(a));
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = { .fh = 1 };
			fuse_reply(fd, in->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_FLUSH:
			for (int i = 0; i < FUSE_STALL_ANSWER; i++)
				answered |= answer[i] && (uint32_t)answer[i] == in->pid;
			if (answered)
				fuse_reply(fd, in->unique, 0, NULL, 0);
			break; /* anyone else waits */
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
			fuse_reply(fd, in->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;
		default:
			fuse_reply(fd, in->unique, -ENOSYS, NULL, 0);
		}
	}
}

/* Mount at mnt (made here) and start the daemon; false (and why, in
 * reason) where the machine does not allow it. */
static bool fuse_stall_mount(struct fuse_stall *fs, const char *mnt, char *reason, size_t rcap)
{
	char opts[128];
	int fd;

	snprintf(fs->mnt, sizeof(fs->mnt), "%s", mnt);
	fs->answer = mmap(NULL, FUSE_STALL_ANSWER * sizeof(pid_t), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (geteuid() != 0) {
		snprintf(reason, rcap, "needs root to mount");
		return false;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0 || fs->answer == MAP_FAILED || mkdir(mnt, 0755) != 0) {
		snprintf(reason, rcap, "no /dev/fuse here (%s)", strerror(errno));
		return false;
	}
	memset(fs->answer, 0, FUSE_STALL_ANSWER * sizeof(pid_t));
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("rshare-stall", mnt, "fuse", MS_NOSUID | MS_NODEV, opts) != 0) {
		snprintf(reason, rcap, "cannot mount FUSE (%s)", strerror(errno));
		close(fd);
		rmdir(mnt);
		return false;
	}
	fflush(NULL);
	fs->daemon = fork();
	if (fs->daemon == 0) {
		fuse_serve(fd, fs->answer);
		_exit(0);
	}
	close(fd);
	return fs->daemon > 0;
}

/* Open the file in a new process whose FLUSH is answered and give the fd
 * to give(fd, arg) there; that process then closes its copy and exits. */
static pid_t fuse_stall_give(struct fuse_stall *fs, int slot, void (*give)(int fd, void *arg),
			     void *arg)
{
	int ready[2];
	char c;
	pid_t pid;

	if (pipe(ready) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char file[160];
		int fd;
		close(ready[1]);
		(void)!read(ready[0], &c, 1); /* its pid is in the answer set */
		snprintf(file, sizeof(file), "%s/f", fs->mnt);
		fd = open(file, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		give(fd, arg);
		close(fd);
		_exit(0);
	}
	fs->answer[slot] = pid;
	(void)!write(ready[1], "g", 1);
	close(ready[0]);
	close(ready[1]);
	return pid;
}

static void fuse_stall_unmount(struct fuse_stall *fs)
{
	kill(fs->daemon, SIGKILL); /* every FLUSH still waiting fails now */
	waitpid(fs->daemon, NULL, 0);
	umount2(fs->mnt, MNT_DETACH);
	rmdir(fs->mnt);
	munmap(fs->answer, FUSE_STALL_ANSWER * sizeof(pid_t));
}

#endif
