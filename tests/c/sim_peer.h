/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the simulated-table tests need to play a peer that pokes the shared
 * file directly: the whole memfd mapped, the lock taken the way a process
 * of the library takes it, and a table made in another process (so this
 * process has not validated it yet). Only the sim tests include this, and
 * with it the table's private layout (sim/sim_table.h).
 */
#ifndef RSHARE_TEST_SIM_PEER_H
#define RSHARE_TEST_SIM_PEER_H

#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sim/sim_table.h"

/* The whole file, VAR pages and device memory included. */
static inline struct sim_table *peer_map(int fd, size_t *len)
{
	struct stat st;
	void *p;

	REQUIRE(fstat(fd, &st) == 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REQUIRE(p != MAP_FAILED);
	if (len)
		*len = (size_t)st.st_size;
	return p;
}

/* A holder value for this process on the table in fd, as the library
 * makes one: its liveness byte read-locked through a description of its
 * own, kept open (so held) for the rest of the process's life. */
static inline uint64_t peer_lock_value(int fd)
{
	struct timespec ts;
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_len = 1 };
	char self[64];
	uint64_t v;
	int d;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (((uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull) &
	     SIM_LIVE_MASK) | 1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	d = open(self, O_RDWR | O_CLOEXEC);
	fl.l_start = sim_live_offset(v);
	REQUIRE(d >= 0 && fcntl(d, F_OFD_SETLK, &fl) == 0);
	return v;
}

static inline void kill_peer(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Fork a peer that takes the table lock honestly, runs damage (if any)
 * with it held, tells us, and waits to be killed or stopped. */
static inline pid_t locked_peer(int fd, void (*damage)(struct sim_table *))
{
	int p[2];
	char c;
	pid_t pid;

	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct sim_table *t = peer_map(fd, NULL);
		uint64_t zero = 0, mine = peer_lock_value(fd);

		while (!__atomic_compare_exchange_n(&t->s.lock, &zero, mine, false,
						    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			zero = 0, usleep(100);
		if (damage)
			damage(t);
		if (write(p[1], "L", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	REQUIRE(read(p[0], &c, 1) == 1);
	close(p[0]);
	return pid;
}

/* The fd of a new sim0 table made by a child process, which this process
 * has never seen (so it validates the header on import). */
static inline int foreign_table_fd(void)
{
	int sv[2], fd = -1;
	pid_t pid;
	char ctl[CMSG_SPACE(sizeof(int))], b = 0;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		rshare_device *dev;

		close(sv[0]);
		if (rshare_device_open("sim0", &dev) != RSHARE_OK ||
		    rshare_device_fd(dev, &fd) != RSHARE_OK)
			_exit(1);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &m, 0) == 1 ? 0 : 1);
	}
	close(sv[1]);
	REQUIRE(recvmsg(sv[0], &m, MSG_CMSG_CLOEXEC) == 1);
	cm = CMSG_FIRSTHDR(&m);
	REQUIRE(cm && cm->cmsg_type == SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sv[0]);
	waitpid(pid, NULL, 0);
	return fd;
}

#endif
