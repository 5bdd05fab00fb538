/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Where a broker's socket lives, and taking it over safely: the default
 * path, the directory made 0700, a lock that keeps two brokers off one
 * path, a stale socket file replaced, a live one never; systemd socket
 * activation.
 */
#include "broker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "util/error.h"
#include "util/fdutil.h"

static int set_path(char path[RSB_PATH_MAX], const char *a, const char *b)
{
	int n = snprintf(path, RSB_PATH_MAX, "%s%s", a, b);

	if (n <= 0 || (size_t)n >= RSB_PATH_MAX)
		return rs_fail(RSHARE_E_INVAL, 0,
			       "broker endpoint \"%s%s\" is %s (a socket path has at most %zu bytes)",
			       a, b, n <= 0 ? "empty" : "too long", RSB_PATH_MAX - 1);
	return RSHARE_OK;
}

/* The last-resort default, in /tmp, where anyone may have made the
 * directory first. */
static void tmp_default(char dir[64])
{
	snprintf(dir, 64, "/tmp/rshare-%u", (unsigned)geteuid());
}

int rsb_resolve(const char *endpoint, char path[RSB_PATH_MAX])
{
	const char *env;
	char dir[64];

	if (endpoint)
		return set_path(path, endpoint, "");
	env = getenv("RSHARE_BROKER");
	if (env && *env)
		return set_path(path, env, "");
	env = getenv("XDG_RUNTIME_DIR");
	if (env && *env)
		return set_path(path, env, "/rshare/broker.sock");
	if (geteuid() == 0)
		return set_path(path, "/run/rshare/broker.sock", "");
	tmp_default(dir);
	return set_path(path, dir, "/broker.sock");
}

/* The directory part of path (the working directory's "." if none). */
static void dir_of(const char *path, char dir[RSB_PATH_MAX])
{
	char *slash;

	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
}

/* May any user put a socket in path's place? A world-writable directory
 * (/tmp, with or without its sticky bit: a name not yet taken is anyone's),
 * or one that cannot be looked at. A directory of another user is that
 * user's: whoever names an endpoint there trusts them. */
static bool open_to_others(const char *path)
{
	char dir[RSB_PATH_MAX];
	struct stat st;

	dir_of(path, dir);
	return stat(dir, &st) != 0 || (st.st_mode & S_IWOTH);
}

/* At the /tmp default, or any path in a directory others can write (an
 * explicit `--socket /tmp/NAME.sock`), a broker of another user (who made
 * the directory or bound the name before us, or a symlink to theirs) would
 * be handed our devices and payloads: there the broker must be this user
 * or root. */
static int check_tmp_broker(int s, const char *path)
{
	char dir[64], def[RSB_PATH_MAX];
	struct ucred cr;
	socklen_t n = sizeof(cr);

	tmp_default(dir);
	snprintf(def, sizeof(def), "%s/broker.sock", dir);
	if (strcmp(path, def) != 0 && !open_to_others(path))
		return RSHARE_OK;
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &n) != 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot tell who serves %s", path);
	if (cr.uid != geteuid() && cr.uid != 0)
		return rs_fail(RSHARE_E_PERM, 0,
			       "the broker at %s runs as uid %u, not as this user or root: "
			       "not trusted", path, (unsigned)cr.uid);
	return RSHARE_OK;
}

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, strlen(path) + 1); /* fits: rsb_resolve checked */
	return RSHARE_OK;
}

/* Connect s to sa, trying again while the listener's queue is full for up
 * to wait_ms. A non-blocking AF_UNIX connect completes at once or fails
 * with EAGAIN (queue full; there is nothing to poll for), where a blocking
 * one would wait for the broker to accept without end, or, under a send
 * timeout, restart its whole wait after every signal. So: attempts, a
 * sleep between them growing to 50 ms, a deadline. 0 or -1 with errno. */
static int connect_within(int s, const struct sockaddr_un *sa, int wait_ms)
{
	uint64_t deadline = rsb_now_ms() + (uint64_t)wait_ms;
	long nap_ms = 1;

	for (;;) {
		struct timespec nap;
		uint64_t now;

		if (connect(s, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		now = rsb_now_ms();
		if (now >= deadline) {
			errno = EAGAIN;
			return -1;
		}
		if ((uint64_t)nap_ms > deadline - now)
			nap_ms = (long)(deadline - now);
		nap = (struct timespec){ .tv_sec = nap_ms / 1000, .tv_nsec = nap_ms % 1000 * 1000000 };
		nanosleep(&nap, NULL); /* a signal only cuts a nap short */
		nap_ms = nap_ms * 2 > 50 ? 50 : nap_ms * 2;
	}
}

int rsb_connect(const char *endpoint, int wait_ms, int *fd)
{
	char path[RSB_PATH_MAX];
	struct sockaddr_un sa;
	int s, fl, status = rsb_resolve(endpoint, path);

	if (status)
		return status;
	fill_addr(&sa, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return rs_fail(errno == EMFILE || errno == ENFILE ? RSHARE_E_NOMEM : RSHARE_E_IO,
			       errno, "cannot make a socket");
	if (connect_within(s, &sa, wait_ms) != 0) {
		int err = errno;
		close(s);
		if (err == EAGAIN && wait_ms)
			return rs_fail(RSHARE_E_IO, ETIMEDOUT,
				       "the broker at %s accepted no connection in %d ms (its "
				       "queue is full: stopped, stuck or flooded)", path, wait_ms);
		if (err == EAGAIN)
			return rs_fail(RSHARE_E_IO, ETIMEDOUT,
				       "the broker at %s accepts no connection now (its queue is "
				       "full: stopped, stuck or flooded; this call does not wait)",
				       path);
		return rs_fail(err == EACCES ? RSHARE_E_PERM : RSHARE_E_IO, err,
			       "no broker reachable at %s", path);
	}
	/* Blocking from here on, as every caller expects. */
	fl = fcntl(s, F_GETFL);
	if (fl < 0 || fcntl(s, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int err = errno;
		close(s);
		return rs_fail(RSHARE_E_IO, err, "cannot make the broker socket blocking");
	}
	status = check_tmp_broker(s, path);
	if (status) {
		close(s);
		return status;
	}
	*fd = s;
	return RSHARE_OK;
}

/* Make the socket's directory (only its last part, 0700) or check that the
 * existing one belongs to this user or root: in a world-writable place
 * such as /tmp, someone else's directory could hand us their socket. */
static int prepare_dir(const char *path)
{
	char dir[RSB_PATH_MAX];
	char *slash;
	struct stat st;

	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	if (!slash)
		return RSHARE_OK; /* relative to the working directory */
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (mkdir(dir, 0700) == 0)
		return RSHARE_OK;
	if (errno != EEXIST)
		return rs_fail(errno == EACCES ? RSHARE_E_PERM : RSHARE_E_IO, errno,
			       "cannot create the broker directory %s", dir);
	/* A symlink is judged by its owner too: one made by another user in
	 * /tmp could point at a world-writable directory (root's /tmp itself)
	 * and open this broker to everyone. */
	if (lstat(dir, &st) != 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot stat %s", dir);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return rs_fail(RSHARE_E_PERM, 0,
			       "broker directory %s belongs to uid %u, not to this user or root",
			       dir, (unsigned)st.st_uid);
	if (stat(dir, &st) != 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot stat %s", dir);
	if (!S_ISDIR(st.st_mode))
		return rs_fail(RSHARE_E_INVAL, ENOTDIR, "%s is not a directory", dir);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return rs_fail(RSHARE_E_PERM, 0,
			       "broker directory %s belongs to uid %u, not to this user or root",
			       dir, (unsigned)st.st_uid);
	return RSHARE_OK;
}

/* A socket file at path: a live broker behind it (RSHARE_E_BUSY), a stale
 * one (removed) or something that is not a socket (refused). */
static int clear_stale(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int s, err;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? RSHARE_OK
				       : rs_fail(RSHARE_E_IO, errno, "cannot stat %s", path);
	if (!S_ISSOCK(st.st_mode))
		return rs_fail(RSHARE_E_BUSY, 0, "%s exists and is not a socket", path);
	fill_addr(&sa, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot make a socket");
	err = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	close(s);
	if (err == 0 || err == EAGAIN || err == EPROTOTYPE)
		return rs_fail(RSHARE_E_BUSY, 0, "a live broker already serves %s", path);
	if (err != ECONNREFUSED)
		return rs_fail(RSHARE_E_IO, err, "cannot probe the socket %s", path);
	if (unlink(path) != 0 && errno != ENOENT)
		return rs_fail(RSHARE_E_IO, errno, "cannot remove the stale socket %s", path);
	return RSHARE_OK;
}

/* Where the lock of the broker at path lives: PATH.lock beside it, unless
 * others can write there (they could make and lock PATH.lock first and
 * keep the broker from ever starting): then in this user's own broker
 * directory (the /tmp default's, 0700 and checked), named after path. */
static int lock_path(const char *path, char lock[RSB_PATH_MAX + 32])
{
	uint64_t h = 14695981039346656037ull;
	char dir[64], probe[RSB_PATH_MAX];
	int status;

	if (!open_to_others(path)) {
		snprintf(lock, RSB_PATH_MAX + 32, "%s.lock", path);
		return RSHARE_OK;
	}
	for (const char *p = path; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	tmp_default(dir);
	snprintf(probe, sizeof(probe), "%s/x", dir);
	status = prepare_dir(probe);
	if (!status)
		snprintf(lock, RSB_PATH_MAX + 32, "%s/lock-%016llx", dir, (unsigned long long)h);
	return status;
}

/* Does fd still hold the file at lock (a stopping broker removes it)? */
static bool same_file(int fd, const char *lock)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(lock, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Lock the broker at path: *lock_fd holds the flock, lock (RSB_PATH_MAX +
 * 32 bytes) names the file, for rsb_unlisten() to remove. */
static int take_lock(const char *path, int *lock_fd, char *lock)
{
	int status = lock_path(path, lock);

	if (status)
		return status;
	/* A broker stopping meanwhile removes the file it locked: a lock
	 * taken on that removed file guards nothing, so take the new one. */
	for (int attempt = 0; attempt < 100; attempt++) {
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0)
			return rs_fail(errno == EACCES ? RSHARE_E_PERM : RSHARE_E_IO, errno,
				       "cannot open the broker lock %s", lock);
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int err = errno;
			close(fd);
			return rs_fail(err == EWOULDBLOCK ? RSHARE_E_BUSY : RSHARE_E_IO, err,
				       "a live broker already serves %s (it holds %s)", path, lock);
		}
		if (same_file(fd, lock)) {
			*lock_fd = fd;
			return RSHARE_OK;
		}
		close(fd);
	}
	return rs_fail(RSHARE_E_BUSY, 0, "the broker lock %s keeps changing", lock);
}

/* systemd socket activation: the first passed fd, if meant for us. */
static int from_systemd(struct rsb_listener *l, bool *taken)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct sockaddr_un sa;
	socklen_t n = sizeof(int);
	int type = 0, listening = 0;

	*taken = false;
	if (!pid || !fds || strtol(pid, NULL, 10) != getpid() || strtol(fds, NULL, 10) < 1)
		return RSHARE_OK;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &n) != 0 || type != SOCK_SEQPACKET ||
	    (n = sizeof(int), getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &n)) != 0 ||
	    !listening)
		return rs_fail(RSHARE_E_INVAL, 0,
			       "systemd passed fd 3, which is not a listening seqpacket socket "
			       "(use ListenSequentialPacket=)");
	n = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	if (getsockname(3, (struct sockaddr *)&sa, &n) != 0 || sa.sun_family != AF_UNIX)
		return rs_fail(RSHARE_E_INVAL, errno, "systemd's fd 3 is not an AF_UNIX socket");
	if (fcntl(3, F_SETFD, FD_CLOEXEC) != 0 ||
	    fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK) != 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot set up systemd's fd 3");
	l->fd = 3;
	l->lock_fd = -1;
	l->owns_path = false;
	memcpy(l->path, sa.sun_path, sizeof(l->path) - 1);
	l->path[sizeof(l->path) - 1] = '\0';
	*taken = true;
	return RSHARE_OK;
}

int rsb_listen(const char *endpoint, struct rsb_listener *l)
{
	struct sockaddr_un sa;
	struct stat st;
	bool taken;
	int s, status;

	memset(l, 0, sizeof(*l));
	l->fd = l->lock_fd = -1;
	if (!endpoint) {
		status = from_systemd(l, &taken);
		if (status || taken)
			return status;
	}
	status = rsb_resolve(endpoint, l->path);
	if (!status)
		status = prepare_dir(l->path);
	if (!status)
		status = take_lock(l->path, &l->lock_fd, l->lock);
	if (!status)
		status = clear_stale(l->path);
	if (status)
		goto fail;
	fill_addr(&sa, l->path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot make a socket");
		goto fail;
	}
	l->fd = s;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		status = rs_fail(errno == EADDRINUSE ? RSHARE_E_BUSY
			       : errno == EACCES ? RSHARE_E_PERM : RSHARE_E_IO,
				 errno, "cannot bind the broker socket %s", l->path);
		goto fail;
	}
	/* Who may connect is decided by the directory (0700 by default) and
	 * then by each share's policy, not by the umask. */
	if (chmod(l->path, 0666) != 0 || stat(l->path, &st) != 0 ||
	    listen(s, SOMAXCONN) != 0) {
		status = rs_fail(RSHARE_E_IO, errno, "cannot set up the broker socket %s", l->path);
		unlink(l->path);
		goto fail;
	}
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	l->owns_path = true;
	return RSHARE_OK;
fail:
	if (l->fd >= 0)
		close(l->fd);
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	l->fd = l->lock_fd = -1;
	return status;
}

void rsb_unlisten(struct rsb_listener *l)
{
	struct stat st;

	/* Remove the socket file only if it is still the one we bound. */
	if (l->owns_path && stat(l->path, &st) == 0 && st.st_dev == l->dev &&
	    st.st_ino == l->ino)
		unlink(l->path);
	if (l->fd >= 0)
		rs_close_quietly(l->fd);
	if (l->lock_fd >= 0) {
		/* Removed while still held, so that no broker takes it in
		 * between (take_lock() checks it holds the file at the path). */
		if (same_file(l->lock_fd, l->lock))
			unlink(l->lock);
		rs_close_quietly(l->lock_fd);
	}
	l->fd = l->lock_fd = -1;
}
