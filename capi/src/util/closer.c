/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Closing fds that came from someone else, off the caller's thread.
 *
 * close() of a file can block for as long as its other side likes: on a
 * FUSE filesystem it sends FLUSH and waits for the daemon (uninterruptibly
 * once a fatal signal arrives), a TCP socket with SO_LINGER and unsent data
 * waits up to its linger time. A peer that hands us such an fd must not
 * stall a thread others depend on (the broker's serving loop) or a call past
 * its bound (rshare_broker_attach, rshare_channel_recv). So those fds go to
 * a queue served by detached closer threads, one started whenever work
 * waits and none is idle, up to CLOSER_THREADS; each stuck close holds one
 * thread, the others go on. The queue is bounded (CLOSER_QUEUE fds): past
 * it rs_close_untrusted() closes on the caller's thread, and the broker
 * stops reading requests while rs_closer_room() is short (server.c), so a
 * flood of stuck fds costs pauses, never memory.
 */
#include "util/fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLOSER_QUEUE 4096
#define CLOSER_THREADS 32
#define CLOSER_STACK (64u << 10)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int queue[CLOSER_QUEUE];
static unsigned head, count, threads, idle;

static void *closer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		int fd;

		while (count == 0) {
			idle++;
			pthread_cond_wait(&work, &lock);
			idle--;
		}
		fd = queue[head];
		head = (head + 1) % CLOSER_QUEUE;
		count--;
		pthread_mutex_unlock(&lock);
		close(fd); /* may block: only this thread waits */
		pthread_mutex_lock(&lock);
	}
	return NULL;
}

/* A forked child has none of the parent's threads: start over (the fds
 * still queued are the child's copies, closed by its first closer). The
 * lock is held across the fork by the forking thread, which is the
 * child's: it lets go. No other library lock is ever taken with this one
 * held, nor this one taken under another, so the order in which the
 * atfork handlers run cannot deadlock. */
static void prepare(void) { pthread_mutex_lock(&lock); }
static void parent(void) { pthread_mutex_unlock(&lock); }
static void child(void)
{
	threads = idle = 0;
	pthread_cond_init(&work, NULL); /* its waiters were the parent's threads */
	pthread_mutex_unlock(&lock);
}
static void init(void) { pthread_atfork(prepare, parent, child); }

/* With lock held: one more thread if all are busy. Signals blocked: they
 * are the application's. */
static void maybe_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;

	if (idle > 0 || threads >= CLOSER_THREADS || pthread_attr_init(&attr) != 0)
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, CLOSER_STACK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, &attr, closer, NULL) == 0)
		threads++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

size_t rs_closer_room(void)
{
	size_t room;

	pthread_once(&once, init);
	pthread_mutex_lock(&lock);
	room = CLOSER_QUEUE - count;
	pthread_mutex_unlock(&lock);
	return room;
}

/* The file type, as the inode knows it: AT_STATX_DONT_SYNC asks no
 * filesystem (FUSE would ask its daemon, which may never answer). *rdev_major:
 * a device's major number. S_IFMT (no such type) if unknown. */
static unsigned stat_type(int fd, unsigned *rdev_major)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) != 0 ||
	    !(stx.stx_mask & STATX_TYPE))
		return S_IFMT;
	*rdev_major = stx.stx_rdev_major;
	return stx.stx_mode & S_IFMT;
}

static unsigned file_type(int fd)
{
	unsigned major;

	return stat_type(fd, &major);
}

/* Kinds whose close never waits for anyone: a pipe, an anonymous inode
 * (eventfd, epoll, ...: type 0), a sealable memfd (shmem has no flush), the
 * memory devices (major 1: /dev/null, /dev/zero, ...). Closed at once, so a
 * caller sees them gone when the call returns. Sockets, ttys, block
 * devices and files of any other filesystem (FUSE, NFS) go to the closer. */
static bool closes_at_once(int fd)
{
	unsigned major = 0, type = stat_type(fd, &major);

	return type == S_IFIFO || type == 0 || (type == S_IFCHR && major == 1) ||
	       (type == S_IFREG && fcntl(fd, F_GET_SEALS) >= 0);
}

bool rs_fd_may_be_device(int fd)
{
	unsigned type = file_type(fd);

	return type == S_IFCHR || (type == S_IFREG && fcntl(fd, F_GET_SEALS) >= 0);
}

void rs_close_untrusted(int fd)
{
	int saved = errno;
	bool queued = false;

	if (fd < 0)
		return;
	if (closes_at_once(fd)) {
		close(fd);
		errno = saved;
		return;
	}
	pthread_once(&once, init);
	pthread_mutex_lock(&lock);
	if (count < CLOSER_QUEUE) {
		queue[(head + count) % CLOSER_QUEUE] = fd;
		count++;
		maybe_start();
		queued = threads > 0;
		if (!queued)
			count--; /* no thread could be started: close it here */
		else
			pthread_cond_signal(&work);
	}
	pthread_mutex_unlock(&lock);
	if (!queued)
		close(fd);
	errno = saved;
}

void rs_close_untrusted_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		rs_close_untrusted(fds[i]);
}

void rs_close_socket_untrusted(int sock)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(RS_SCM_MAX_FD * sizeof(int))];
	} ctl;
	char byte;
	int fds[RS_SCM_MAX_FD], saved = errno;

	if (sock < 0)
		return;
	/* No more can arrive after SHUT_RD (a sender gets EPIPE); what did is
	 * received, its fds closed off this thread. A queue too long to
	 * drain here, or a closer too far behind to take its fds, and the
	 * socket goes to the closer whole (its close releases them there). */
	bool empty = false;

	shutdown(sock, SHUT_RDWR);
	for (int i = 0; i < 256 && !empty && rs_closer_room() > RS_SCM_MAX_FD; i++) {
		struct iovec iov = { &byte, 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf) };
		ssize_t r = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		int n;

		/* ECONNRESET (the peer closed with our replies unread) is
		 * reported once, before what is still queued: read on. */
		if (r < 0 && (errno == EINTR || errno == ECONNRESET))
			continue;
		if (r < 0) {
			empty = errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN;
			break;
		}
		n = rs_cmsg_take_fds(&m, fds, RS_SCM_MAX_FD);
		rs_close_untrusted_all(fds, n);
		empty = r == 0 && n == 0;
	}
	if (empty)
		close(sock);
	else
		rs_close_untrusted(sock);
	errno = saved;
}
