/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The blocking channel calls as Python's socket module behaves:
 *  - the interpreter lock is released while waiting, so other threads run;
 *  - Ctrl-C (any signal with a Python handler) interrupts the wait: the wait
 *    is poll() in slices of at most SLICE_MS with PyErr_CheckSignals()
 *    between (poll also returns early with EINTR when the signal lands on
 *    this thread; the slice bounds the delay when it lands on another);
 *  - a timeout (the socket's, e.g. settimeout(1)) raises TimeoutError, and
 *    a non-blocking socket raises BlockingIOError instead of waiting.
 * The C call runs once the socket is ready; an EAGAIN from it (another
 * reader was faster) goes back to waiting while time is left. On a
 * non-blocking fd (any socket with a timeout) the C receive could stop in
 * the middle of a message that is still arriving (a stream carries a 64 KiB
 * payload in several pieces) and lose it, so it runs only once the whole
 * message is queued: its header is peeked (no fd is installed, nothing is
 * consumed) and FIONREAD says how much has arrived.
 */
#include "pymodule.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rshare/rshare.h"

#define SLICE_MS 100

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait until fd has events or the deadline (< 0: none) passes. 0 when
 * ready, -1 with TimeoutError, a signal handler's exception or OSError. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int ms = SLICE_MS, r, err;

		if (deadline >= 0) {
			double left = deadline - now();

			if (left <= 0) {
				PyErr_SetString(PyExc_TimeoutError, "timed out");
				return -1;
			}
			if (left * 1000 < ms)
				ms = (int)(left * 1000) + 1;
		}
		Py_BEGIN_ALLOW_THREADS
		r = poll(&p, 1, ms);
		err = errno;
		Py_END_ALLOW_THREADS
		if (r > 0)
			return 0; /* ready, or an error/hang-up the C call will report */
		if (r < 0 && err != EINTR) {
			errno = err;
			PyErr_SetFromErrno(PyExc_OSError);
			return -1;
		}
		if (PyErr_CheckSignals() < 0)
			return -1;
	}
}

#define HEADER 16           /* the channel header: "RSHC", u16, u16, u32 length, u32 */
#define PIECE_WAIT_NS 1000000L /* between looks at a message still arriving */

/* Is a whole message queued on fd? Also true when what is queued is no
 * rshare message or cannot be read: the C call then reports it. */
static bool whole_message_queued(int fd)
{
	unsigned char h[HEADER];
	ssize_t r = recv(fd, h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
	int type = 0, queued = 0;
	socklen_t size = sizeof(type);
	uint32_t len;

	if (r < 0)
		return errno != EAGAIN && errno != EWOULDBLOCK;
	if (r == 0 || memcmp(h, "RSHC", (size_t)r < 4 ? (size_t)r : 4) != 0)
		return true; /* the peer closed, or not an rshare message */
	if (r < HEADER) /* a stream's header still arriving; a short packet is an error */
		return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 ||
		       type != SOCK_STREAM;
	len = (uint32_t)h[8] | (uint32_t)h[9] << 8 | (uint32_t)h[10] << 16 |
	      (uint32_t)h[11] << 24;
	if (len > RSHARE_PAYLOAD_MAX || ioctl(fd, FIONREAD, &queued) != 0)
		return true;
	return (size_t)queued >= HEADER + (size_t)len;
}

/* Wait, on a non-blocking fd, until a whole message is queued: 0, or -1
 * with BlockingIOError (timeout 0), TimeoutError or a signal's exception. */
static int wait_whole_message(int fd, double timeout, double deadline)
{
	while (!whole_message_queued(fd)) {
		struct timespec pause = { 0, PIECE_WAIT_NS };

		if (timeout == 0) {
			errno = EAGAIN;
			PyErr_SetFromErrno(PyExc_OSError); /* BlockingIOError */
			return -1;
		}
		if (deadline >= 0 && now() >= deadline) {
			PyErr_SetString(PyExc_TimeoutError, "timed out");
			return -1;
		}
		Py_BEGIN_ALLOW_THREADS
		nanosleep(&pause, NULL);
		Py_END_ALLOW_THREADS
		if (PyErr_CheckSignals() < 0)
			return -1;
	}
	return 0;
}

/* A C status after a channel call: 1 to wait and retry (EAGAIN with time
 * left), else -1 with the exception set. */
static int channel_failure(int status, int err, double timeout)
{
	if ((status == RSHARE_E_AGAIN || status == RSHARE_E_IO) &&
	    (err == EAGAIN || err == EWOULDBLOCK)) {
		if (timeout != 0)
			return 1;
		errno = err;
		PyErr_SetFromErrno(PyExc_OSError); /* BlockingIOError */
		return -1;
	}
	rs_py_raise(status);
	return -1;
}

static int parse_timeout(PyObject *arg, double *timeout)
{
	*timeout = arg == Py_None ? -1.0 : PyFloat_AsDouble(arg);
	if (*timeout == -1.0 && PyErr_Occurred())
		return -1;
	if (arg != Py_None && *timeout < 0) {
		PyErr_SetString(PyExc_ValueError, "timeout must be None or >= 0");
		return -1;
	}
	return 0;
}

/* (Device, payload bytes) of a received message; frees buf. */
static PyObject *received(rshare_device *h, char *buf, size_t len)
{
	PyObject *dev, *payload = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);

	PyMem_Free(buf);
	if (!payload) {
		rshare_device_close(h);
		return NULL;
	}
	dev = rs_py_wrap_device(h);
	if (!dev) {
		Py_DECREF(payload);
		return NULL;
	}
	return Py_BuildValue("(NN)", dev, payload);
}

/* The extra fds received, as a list (closed, and NULL, on failure). */
static PyObject *fd_list(const int *fds, size_t n)
{
	PyObject *list = PyList_New((Py_ssize_t)n);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *v = PyLong_FromLong(fds[i]);

		if (!v) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, v);
	}
	if (!list)
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
	return list;
}

/* channel_recv_wait(fd, timeout[, with_fds]) -> (Device, payload bytes),
 * or (Device, payload bytes, [fds]) with with_fds true (since 1.2). */
static PyObject *channel_recv_wait(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	double timeout, deadline;
	PyObject *dev, *payload, *fdl = NULL;
	rshare_device *h = NULL;
	int fds[RSHARE_CHANNEL_FDS_MAX];
	size_t len = 0, nfds = 0;
	char *buf;
	int fd, status, err, with_fds = 0;

	(void)module;
	if (nargs != 2 && nargs != 3)
		return PyErr_Format(PyExc_TypeError, "channel_recv_wait(fd, timeout[, with_fds])");
	if (nargs == 3 && (with_fds = PyObject_IsTrue(args[2])) < 0)
		return NULL;
	fd = PyObject_AsFileDescriptor(args[0]);
	if (fd < 0)
		return NULL;
	if (parse_timeout(args[1], &timeout) < 0)
		return NULL;
	buf = PyMem_Malloc(RSHARE_PAYLOAD_MAX);
	if (!buf)
		return PyErr_NoMemory();
	deadline = timeout > 0 ? now() + timeout : -1;
	for (;;) {
		if (timeout != 0 && wait_fd(fd, POLLIN, deadline) < 0)
			goto fail;
		if (timeout >= 0 && wait_whole_message(fd, timeout, deadline) < 0)
			goto fail;
		Py_BEGIN_ALLOW_THREADS
		if (with_fds)
			status = rshare_channel_recvv(fd, &h, fds, RSHARE_CHANNEL_FDS_MAX, &nfds, buf,
						      RSHARE_PAYLOAD_MAX, &len);
		else
			status = rshare_channel_recv(fd, &h, buf, RSHARE_PAYLOAD_MAX, &len);
		err = rshare_last_errno();
		Py_END_ALLOW_THREADS
		if (!status)
			break;
		if (channel_failure(status, err, timeout) < 0)
			goto fail;
	}
	if (!with_fds)
		return received(h, buf, len);
	payload = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
	PyMem_Free(buf);
	fdl = fd_list(fds, nfds);
	if (!payload || !fdl) {
		Py_XDECREF(payload);
		Py_XDECREF(fdl);
		rshare_device_close(h);
		return NULL;
	}
	dev = rs_py_wrap_device(h);
	if (!dev) {
		Py_DECREF(payload);
		Py_DECREF(fdl);
		return NULL;
	}
	return Py_BuildValue("(NNN)", dev, payload, fdl);
fail:
	PyMem_Free(buf);
	return NULL;
}

/* channel_recv_nowait(fd) -> (Device, payload bytes), or None while no
 * message is queued (RSHARE_E_AGAIN): for an event loop's reader callback
 * on a non-blocking socket (rshare.aio.recv). */
static PyObject *channel_recv_nowait(PyObject *module, PyObject *arg)
{
	rshare_device *h = NULL;
	size_t len = 0;
	char *buf;
	int fd, status;

	(void)module;
	fd = PyObject_AsFileDescriptor(arg);
	if (fd < 0)
		return NULL;
	buf = PyMem_Malloc(RSHARE_PAYLOAD_MAX);
	if (!buf)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	status = rshare_channel_recv(fd, &h, buf, RSHARE_PAYLOAD_MAX, &len);
	Py_END_ALLOW_THREADS
	if (status) {
		PyMem_Free(buf);
		if (status == RSHARE_E_AGAIN)
			Py_RETURN_NONE;
		return rs_py_raise(status);
	}
	return received(h, buf, len);
}

/* The extra fds to send: a sequence of at most RSHARE_CHANNEL_FDS_MAX ints. */
static int fds_arg(PyObject *arg, int *fds, size_t *n)
{
	PyObject *seq = PySequence_Fast(arg, "fds must be a sequence of ints");
	Py_ssize_t count;

	if (!seq)
		return -1;
	count = PySequence_Fast_GET_SIZE(seq);
	if (count > RSHARE_CHANNEL_FDS_MAX) {
		Py_DECREF(seq);
		PyErr_Format(PyExc_ValueError, "%zd fds, at most %d travel with a message", count,
			     RSHARE_CHANNEL_FDS_MAX);
		return -1;
	}
	for (Py_ssize_t i = 0; i < count; i++) {
		fds[i] = PyObject_AsFileDescriptor(PySequence_Fast_GET_ITEM(seq, i));
		if (fds[i] < 0) {
			Py_DECREF(seq);
			return -1;
		}
	}
	*n = (size_t)count;
	Py_DECREF(seq);
	return 0;
}

/* channel_send_wait(fd, dev, payload, timeout[, fds]) -> None */
static PyObject *channel_send_wait(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	Py_buffer view = { 0 };
	double timeout, deadline;
	void *dev;
	int fd, status = 0, err, fds[RSHARE_CHANNEL_FDS_MAX];
	size_t nfds = 0;

	(void)module;
	if (nargs != 4 && nargs != 5)
		return PyErr_Format(PyExc_TypeError,
				    "channel_send_wait(fd, dev, payload, timeout[, fds])");
	if (nargs == 5 && fds_arg(args[4], fds, &nfds) < 0)
		return NULL;
	fd = PyObject_AsFileDescriptor(args[0]);
	if (fd < 0)
		return NULL;
	if (!rs_py_handle_of(args[1], &dev))
		return PyErr_Format(PyExc_TypeError, "send() expects a Device, not %.100s",
				    Py_TYPE(args[1])->tp_name);
	if (parse_timeout(args[3], &timeout) < 0)
		return NULL;
	if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0)
		return NULL;
	deadline = timeout > 0 ? now() + timeout : -1;
	for (;;) {
		if (timeout != 0 && wait_fd(fd, POLLOUT, deadline) < 0)
			break;
		Py_BEGIN_ALLOW_THREADS
		status = rshare_channel_sendv(fd, dev, fds, nfds, view.buf, (size_t)view.len);
		err = rshare_last_errno();
		Py_END_ALLOW_THREADS
		if (!status || channel_failure(status, err, timeout) < 0)
			break;
	}
	PyBuffer_Release(&view);
	if (status || PyErr_Occurred())
		return NULL;
	Py_RETURN_NONE;
}

PyMethodDef rs_py_wait_methods[] = {
	{ "channel_recv_wait", (PyCFunction)(void (*)(void))channel_recv_wait, METH_FASTCALL,
	  "channel_recv_wait(fd, timeout[, with_fds]): wait (interruptibly, without the\n"
	  "interpreter lock; timeout None blocks, 0 does not wait) and receive (Device,\n"
	  "payload), or (Device, payload, [fds]) with with_fds true." },
	{ "channel_recv_nowait", channel_recv_nowait, METH_O,
	  "channel_recv_nowait(fd): (Device, payload), or None while nothing is queued\n"
	  "(a non-blocking socket; since 1.2)." },
	{ "channel_send_wait", (PyCFunction)(void (*)(void))channel_send_wait, METH_FASTCALL,
	  "channel_send_wait(fd, dev, payload, timeout[, fds]): wait until writable, then\n"
	  "send, with up to RSHARE_CHANNEL_FDS_MAX extra fds." },
	{ NULL, NULL, 0, NULL }
};
