/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker calls for Python (since 1.1), hand-written like wait.c because
 * they block: each runs without the interpreter lock, and attach waits in
 * slices of at most SLICE_MS so that Ctrl-C (any signal with a Python
 * handler) interrupts it between two slices. Handles of brokers and shares
 * are ints (generation-checked tokens: any int is safe to pass back).
 */
#include "pymodule.h"

#include <stdint.h>
#include <stdlib.h>
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

static int handle_arg(PyObject *o, void **h)
{
	*h = PyLong_AsVoidPtr(o);
	return *h || !PyErr_Occurred();
}

/* A sequence of at most RSHARE_SHARE_IDS_MAX uids or gids. */
static int ids_arg(PyObject *seq, const char *what, uint32_t *ids, uint32_t *n)
{
	PyObject *fast = PySequence_Fast(seq, "allowed uids and gids must be sequences of ints");
	Py_ssize_t len;

	if (!fast)
		return -1;
	len = PySequence_Fast_GET_SIZE(fast);
	if (len > RSHARE_SHARE_IDS_MAX) {
		Py_DECREF(fast);
		PyErr_Format(PyExc_ValueError, "at most %d %s, not %zd", RSHARE_SHARE_IDS_MAX, what,
			     len);
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));
		if ((v == (unsigned long)-1 && PyErr_Occurred()) || v > UINT32_MAX) {
			Py_DECREF(fast);
			if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
				PyErr_Clear();
				PyErr_Format(PyExc_ValueError, "%s must be ints in 0..2**32-1", what);
			}
			return -1;
		}
		ids[i] = (uint32_t)v;
	}
	*n = (uint32_t)len;
	Py_DECREF(fast);
	return 0;
}

static PyObject *broker_start(PyObject *self, PyObject *args)
{
	const char *endpoint;
	rshare_broker *b = NULL;
	int st;

	(void)self;
	if (!PyArg_ParseTuple(args, "z:broker_start", &endpoint))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = rshare_broker_start(endpoint, &b);
	Py_END_ALLOW_THREADS
	return st ? rs_py_raise(st) : PyLong_FromVoidPtr(b);
}

static PyObject *broker_stop(PyObject *self, PyObject *arg)
{
	void *b;
	int st;

	(void)self;
	if (!handle_arg(arg, &b))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = rshare_broker_stop(b);
	Py_END_ALLOW_THREADS
	if (st)
		return rs_py_raise(st);
	Py_RETURN_NONE;
}

static PyObject *broker_endpoint(PyObject *self, PyObject *arg)
{
	char path[256];
	size_t n;
	void *b;
	int st;

	(void)self;
	if (arg == Py_None) {
		st = rshare_broker_default_endpoint(path, sizeof(path), &n);
	} else {
		if (!handle_arg(arg, &b))
			return NULL;
		st = rshare_broker_endpoint(b, path, sizeof(path), &n);
	}
	return st ? rs_py_raise(st) : PyUnicode_DecodeFSDefaultAndSize(path, (Py_ssize_t)n);
}

static PyObject *broker_publish(PyObject *self, PyObject *args)
{
	uint32_t uids[RSHARE_SHARE_IDS_MAX], gids[RSHARE_SHARE_IDS_MAX];
	rshare_publish_opts o = { .size = sizeof(o), .uids = uids, .gids = gids };
	const char *endpoint, *name;
	PyObject *dev, *uid_seq, *gid_seq;
	rshare_share *share = NULL;
	PyObject *fd_seq = NULL;
	int fds[RSHARE_CHANNEL_FDS_MAX + 1];
	Py_buffer payload;
	Py_ssize_t nfds = 0;
	void *h;
	int persistent, st;

	(void)self;
	if (!PyArg_ParseTuple(args, "zsOy*pOO|O:broker_publish", &endpoint, &name, &dev, &payload,
			      &persistent, &uid_seq, &gid_seq, &fd_seq))
		return NULL;
	if (fd_seq) { /* a sequence of fds (buffers' memory); since 1.2 */
		PyObject *seq = PySequence_Fast(fd_seq, "fds must be a sequence");

		nfds = seq ? PySequence_Fast_GET_SIZE(seq) : -1;
		if (nfds > RSHARE_CHANNEL_FDS_MAX + 1)
			nfds = RSHARE_CHANNEL_FDS_MAX + 1; /* the library refuses: too many */
		for (Py_ssize_t i = 0; i < nfds; i++)
			if ((fds[i] = PyObject_AsFileDescriptor(PySequence_Fast_GET_ITEM(seq, i))) < 0)
				nfds = -1;
		Py_XDECREF(seq);
		if (nfds < 0) {
			PyBuffer_Release(&payload);
			return NULL;
		}
	}
	if (!rs_py_handle_of(dev, &h)) {
		PyBuffer_Release(&payload);
		PyErr_Format(PyExc_TypeError, "publish() expects a Device, not %s",
			     Py_TYPE(dev)->tp_name);
		return NULL;
	}
	if (ids_arg(uid_seq, "uids", uids, &o.n_uids) < 0 ||
	    ids_arg(gid_seq, "gids", gids, &o.n_gids) < 0) {
		PyBuffer_Release(&payload);
		return NULL;
	}
	o.flags = persistent ? RSHARE_PUBLISH_PERSISTENT : 0;
	Py_BEGIN_ALLOW_THREADS
	st = rshare_broker_publishv(endpoint, name, h, fds, (size_t)nfds, payload.buf,
				    (size_t)payload.len, &o, &share);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&payload);
	return st ? rs_py_raise(st) : PyLong_FromVoidPtr(share);
}

static PyObject *broker_withdraw(PyObject *self, PyObject *arg)
{
	void *s;
	int st;

	(void)self;
	if (!handle_arg(arg, &s))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = rshare_broker_withdraw(s);
	Py_END_ALLOW_THREADS
	if (st)
		return rs_py_raise(st);
	Py_RETURN_NONE;
}

static PyObject *broker_withdraw_name(PyObject *self, PyObject *args)
{
	const char *endpoint, *name;
	int st;

	(void)self;
	if (!PyArg_ParseTuple(args, "zs:broker_withdraw_name", &endpoint, &name))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = rshare_broker_withdraw_name(endpoint, name);
	Py_END_ALLOW_THREADS
	if (st)
		return rs_py_raise(st);
	Py_RETURN_NONE;
}

/* (Device, payload, [fds]) of an attach: the device h and the fds
 * received are the caller's then. If the tuple cannot be made (out of
 * memory) the device and every fd are closed and NULL returned: a list of
 * ints does not close its fds when it goes, nor does a failed
 * Py_BuildValue give back the references "N" would have taken, so the
 * parts are held here ("O") and dropped once whatever happened. */
static PyObject *attached_tuple(rshare_device *h, const char *buf, size_t len, const int *fds,
				size_t nfds)
{
	PyObject *dev = rs_py_wrap_device(h); /* closes h when it fails */
	PyObject *fdl = dev ? PyList_New((Py_ssize_t)nfds) : NULL, *res = NULL;

	for (size_t i = 0; fdl && i < nfds; i++) {
		PyObject *v = PyLong_FromLong(fds[i]);

		if (v)
			PyList_SET_ITEM(fdl, (Py_ssize_t)i, v);
		else
			Py_CLEAR(fdl);
	}
	if (dev && fdl)
		res = Py_BuildValue("(Oy#O)", dev, buf, (Py_ssize_t)len, fdl);
	if (!res)
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
	Py_XDECREF(dev); /* the tuple's reference, or the last: closes the device */
	Py_XDECREF(fdl);
	return res;
}

/* (Device, payload, [fds]); timeout in seconds, None: no limit, 0: no
 * wait. The fds (a share's buffers' memory, since 1.2) are the caller's. */
static PyObject *broker_attach(PyObject *self, PyObject *args)
{
	const char *endpoint, *name;
	PyObject *timeout, *res;
	rshare_device *h = NULL;
	double deadline = -1;
	int fds[RSHARE_CHANNEL_FDS_MAX];
	size_t len = 0, nfds = 0;
	char *buf;
	int st;

	(void)self;
	if (!PyArg_ParseTuple(args, "zsO:broker_attach", &endpoint, &name, &timeout))
		return NULL;
	if (timeout != Py_None) {
		double t = PyFloat_AsDouble(timeout);
		if (t == -1.0 && PyErr_Occurred())
			return NULL;
		if (t < 0) {
			PyErr_SetString(PyExc_ValueError, "timeout must be None or >= 0");
			return NULL;
		}
		deadline = now() + t;
	}
	buf = malloc(RSHARE_PAYLOAD_MAX);
	if (!buf)
		return PyErr_NoMemory();
	for (;;) {
		int ms = SLICE_MS;

		if (deadline >= 0) {
			double left = deadline - now();
			ms = left <= 0 ? 0 : left * 1000 < SLICE_MS ? (int)(left * 1000) + 1 : SLICE_MS;
		}
		Py_BEGIN_ALLOW_THREADS
		st = rshare_broker_attachv(endpoint, name, ms, &h, fds, RSHARE_CHANNEL_FDS_MAX, &nfds,
					   buf, RSHARE_PAYLOAD_MAX, &len);
		Py_END_ALLOW_THREADS
		if (st != RSHARE_E_NOT_FOUND || (deadline >= 0 && now() >= deadline))
			break;
		if (PyErr_CheckSignals() < 0) {
			free(buf);
			return NULL;
		}
	}
	if (st) {
		free(buf);
		return rs_py_raise(st);
	}
	res = attached_tuple(h, buf, len, fds, nfds);
	free(buf);
	return res;
}

#define RS_LIST_TRIES 8

/* A JSON text from the broker: rshare_broker_list() or _waiting(). */
static PyObject *broker_json(PyObject *args, const char *format,
			     int (*call)(const char *, char *, size_t, size_t *))
{
	const char *endpoint;
	size_t cap = 4096, len = 0;
	PyObject *res;
	char *buf = NULL;
	int st;

	if (!PyArg_ParseTuple(args, format, &endpoint))
		return NULL;
	/* The list may grow between two calls: a few more tries, not an
	 * endless loop against a broker that always says NOSPACE. */
	for (int tries = 0;; tries++) {
		char *bigger = realloc(buf, cap);
		if (!bigger) {
			free(buf);
			return PyErr_NoMemory();
		}
		buf = bigger;
		Py_BEGIN_ALLOW_THREADS
		st = call(endpoint, buf, cap, &len);
		Py_END_ALLOW_THREADS
		if (st != RSHARE_E_NOSPACE || tries == RS_LIST_TRIES - 1)
			break;
		if (PyErr_CheckSignals() < 0) { /* Ctrl-C between tries */
			free(buf);
			return NULL;
		}
		cap = len + 4096; /* it may grow before the next call */
	}
	res = st ? rs_py_raise(st) : PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "strict");
	free(buf);
	return res;
}

static PyObject *broker_list(PyObject *self, PyObject *args)
{
	(void)self;
	return broker_json(args, "z:broker_list", rshare_broker_list);
}

static PyObject *broker_waiting(PyObject *self, PyObject *args)
{
	(void)self;
	return broker_json(args, "z:broker_waiting", rshare_broker_waiting);
}

/* ---- attach from an event loop (since 1.2): rshare.aio drives these ---- */

static PyObject *attach_start(PyObject *self, PyObject *args)
{
	const char *endpoint, *name;
	rshare_attach *op = NULL;
	PyObject *res;
	int st;

	(void)self;
	if (!PyArg_ParseTuple(args, "zs:attach_start", &endpoint, &name))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = rshare_broker_attach_startv(endpoint, name, &op); /* buffers' fds welcome */
	Py_END_ALLOW_THREADS
	if (st)
		return rs_py_raise(st);
	res = PyLong_FromVoidPtr(op);
	if (!res)
		rshare_attach_cancel(op); /* nobody could: no connection left behind */
	return res;
}

static PyObject *attach_fd(PyObject *self, PyObject *arg)
{
	void *op;
	int fd, st;

	(void)self;
	if (!handle_arg(arg, &op))
		return NULL;
	st = rshare_attach_fd(op, &fd);
	return st ? rs_py_raise(st) : PyLong_FromLong(fd);
}

/* (Device, payload, [fds]) once the share arrived (the operation is then
 * over; the fds, its buffers' memory, are the caller's), None while it has
 * not (RSHARE_E_AGAIN); never blocks. */
static PyObject *attach_finish(PyObject *self, PyObject *arg)
{
	rshare_device *h = NULL;
	PyObject *res;
	int fds[RSHARE_CHANNEL_FDS_MAX];
	size_t len = 0, nfds = 0;
	char *buf;
	void *op;
	int st;

	(void)self;
	if (!handle_arg(arg, &op))
		return NULL;
	buf = malloc(RSHARE_PAYLOAD_MAX);
	if (!buf)
		return PyErr_NoMemory();
	st = rshare_attach_finishv(op, &h, fds, RSHARE_CHANNEL_FDS_MAX, &nfds, buf,
				   RSHARE_PAYLOAD_MAX, &len);
	if (st) {
		free(buf);
		if (st == RSHARE_E_AGAIN)
			Py_RETURN_NONE;
		return rs_py_raise(st);
	}
	res = attached_tuple(h, buf, len, fds, nfds);
	free(buf);
	return res;
}

static PyObject *attach_cancel(PyObject *self, PyObject *arg)
{
	void *op;
	int st;

	(void)self;
	if (!handle_arg(arg, &op))
		return NULL;
	st = rshare_attach_cancel(op);
	if (st)
		return rs_py_raise(st);
	Py_RETURN_NONE;
}

PyMethodDef rs_py_broker_methods[] = {
	{ "broker_start", broker_start, METH_VARARGS,
	  "broker_start(endpoint): start an embedded broker; its handle." },
	{ "broker_stop", broker_stop, METH_O, "broker_stop(broker): stop it." },
	{ "broker_endpoint", broker_endpoint, METH_O,
	  "broker_endpoint(broker): its socket path (None: the default endpoint)." },
	{ "broker_publish", broker_publish, METH_VARARGS,
	  "broker_publish(endpoint, name, dev, payload, persistent, uids, gids): a share handle." },
	{ "broker_withdraw", broker_withdraw, METH_O,
	  "broker_withdraw(share): withdraw and release the share handle." },
	{ "broker_withdraw_name", broker_withdraw_name, METH_VARARGS,
	  "broker_withdraw_name(endpoint, name): withdraw a share by name." },
	{ "broker_attach", broker_attach, METH_VARARGS,
	  "broker_attach(endpoint, name, timeout): (Device, payload); waits interruptibly." },
	{ "broker_list", broker_list, METH_VARARGS,
	  "broker_list(endpoint): the broker's JSON list of shares." },
	{ "broker_waiting", broker_waiting, METH_VARARGS,
	  "broker_waiting(endpoint): the broker's JSON list of waiting attaches." },
	{ "attach_start", attach_start, METH_VARARGS,
	  "attach_start(endpoint, name): a pending attach operation (no time limit)." },
	{ "attach_fd", attach_fd, METH_O, "attach_fd(op): the fd to wait on for readability." },
	{ "attach_finish", attach_finish, METH_O,
	  "attach_finish(op): (Device, payload, fds), or None while the share has not arrived." },
	{ "attach_cancel", attach_cancel, METH_O,
	  "attach_cancel(op): end a pending operation (no fd, no request left)." },
	{ NULL, NULL, 0, NULL }
};

int rs_py_broker_init(PyObject *module)
{
	if (PyModule_AddFunctions(module, rs_py_broker_methods) < 0 ||
	    PyModule_AddIntConstant(module, "RSHARE_SHARE_NAME_MAX", RSHARE_SHARE_NAME_MAX) < 0 ||
	    PyModule_AddIntConstant(module, "RSHARE_SHARE_IDS_MAX", RSHARE_SHARE_IDS_MAX) < 0 ||
	    PyModule_AddIntConstant(module, "RSHARE_PUBLISH_PERSISTENT",
				    RSHARE_PUBLISH_PERSISTENT) < 0)
		return -1;
	return 0;
}
