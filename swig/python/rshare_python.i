/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Python typemaps for the abstract patterns named in ../rshare.i.
 *
 * The low-level module (rshare._rshare) is plain and fast: handles are
 * Python ints, or the package's Device/PD/Var objects (the C side
 * generation-checks every token, so any int is safe to pass), blobs are bytes, sized outputs come back as bytes/str and
 * a negative status raises the rshare.Error subclass the pure-Python
 * package registered for it. The package (bindings/python/rshare) builds
 * the objects users see on top of this.
 */

/* ---- the interpreter lock -------------------------------------------------
 * The module is built with -threads, but only the calls that may block keep
 * the lock released: every other call returns in well under a microsecond,
 * less than releasing and taking back the lock would cost. The package
 * itself sends and receives through wait.c, which also waits
 * interruptibly and honours socket timeouts. */
%feature("nothread", "1");
%feature("nothread", "0") rshare_channel_send;
%feature("nothread", "0") rshare_channel_recv;
%feature("nothread", "0") rshare_channel_sendv;
%feature("nothread", "0") rshare_channel_recvv;

/* ---- the hand-written parts (pymodule.h): exceptions, the object base
 * types, the interruptible channel calls ------------------------------------ */
%{
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include "pymodule.h" /* bindings/python/ext */
%}
%init %{
	if (rs_py_init(m) < 0)
		return NULL;
%}

%typemap(out, noblock=1) int RSHARE_STATUS {
	if ($1 < 0) {
		rs_py_raise($1);
		SWIG_fail;
	}
	$result = SWIG_Py_Void();
}

/* ---- handles: ints (or the package's objects) in, ints out ---------------- */
%typemap(in, noblock=1) SWIGTYPE *RSHARE_HANDLE (void *obj_handle = NULL) {
	if ($input == Py_None) {
		$1 = NULL;
	} else if (rs_py_handle_of($input, &obj_handle)) {
		$1 = ($1_ltype)obj_handle;
	} else {
		$1 = ($1_ltype)PyLong_AsVoidPtr($input);
		if (!$1 && PyErr_Occurred())
			SWIG_fail;
	}
}

%typemap(in, numinputs=0, noblock=1) SWIGTYPE **RSHARE_NEW_HANDLE ($*1_ltype handle = NULL) {
	$1 = &handle;
}
%typemap(argout, noblock=1) SWIGTYPE **RSHARE_NEW_HANDLE {
	$result = SWIG_Python_AppendOutput($result, PyLong_FromVoidPtr((void *)*$1));
}

/* ---- bytes in: bytes fast path, any buffer otherwise, None is NULL ------- */
%typemap(in, noblock=1) (const void *RSHARE_BYTES, size_t RSHARE_LEN) (Py_buffer view = {0}) {
	if (PyBytes_Check($input)) {
		$1 = PyBytes_AS_STRING($input);
		$2 = (size_t)PyBytes_GET_SIZE($input);
	} else if ($input == Py_None) {
		$1 = NULL;
		$2 = 0;
	} else {
		if (PyObject_GetBuffer($input, &view, PyBUF_SIMPLE) < 0)
			SWIG_fail;
		$1 = view.buf;
		$2 = (size_t)view.len;
	}
}
%typemap(freearg, noblock=1) (const void *RSHARE_BYTES, size_t RSHARE_LEN) {
	if (view$argnum.obj)
		PyBuffer_Release(&view$argnum);
}

/* ---- sized outputs --------------------------------------------------------
 * The buffers are sized from the header's bounds (RSHARE_BLOB_MAX,
 * RSHARE_TEXT_MAX, RSHARE_NAME_MAX, RSHARE_PAYLOAD_MAX; a blob's JSON
 * description is a few hundred bytes), on the stack, so no call allocates
 * twice. Should the C side ever need more, it says RSHARE_E_NOSPACE and the
 * status typemap raises BufferTooSmall: never a truncated result. */
%typemap(in, numinputs=0, noblock=1) (void *RSHARE_BLOB_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
	(char buf[1024], size_t len = 0) {
	$1 = buf;
	$2 = sizeof(buf);
	$3 = &len;
}
%typemap(in, numinputs=0, noblock=1) (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
	(char buf[RSHARE_PAYLOAD_MAX], size_t len = 0) {
	$1 = buf;
	$2 = sizeof(buf);
	$3 = &len;
}
%typemap(argout, noblock=1) (void *RSHARE_BLOB_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN),
			    (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	$result = SWIG_Python_AppendOutput($result,
		PyBytes_FromStringAndSize((const char *)$1, (Py_ssize_t)(*$3 < $2 ? *$3 : $2)));
}

%typemap(in, numinputs=0, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
	(char buf[1024], size_t len = 0) {
	$1 = buf;
	$2 = sizeof(buf);
	$3 = &len;
}
%typemap(argout, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	$result = SWIG_Python_AppendOutput($result,
		PyUnicode_DecodeUTF8($1, (Py_ssize_t)(*$3 < $2 ? *$3 : $2), "surrogateescape"));
}

%typemap(in, numinputs=0, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP)
	(char buf[RSHARE_NAME_MAX] = "") {
	$1 = buf;
	$2 = sizeof(buf);
}
%typemap(argout, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP) {
	$result = SWIG_Python_AppendOutput($result,
		PyUnicode_DecodeUTF8($1, (Py_ssize_t)strnlen($1, $2), "surrogateescape"));
}

/* ---- an address out (only rshare_var_map; the package maps pages with
 * Python's mmap instead, see rshare/_objects.py) --------------------------- */
%typemap(in, numinputs=0, noblock=1) void **RSHARE_ADDR_OUT (void *addr = NULL) {
	$1 = &addr;
}
%typemap(argout, noblock=1) void **RSHARE_ADDR_OUT {
	$result = SWIG_Python_AppendOutput($result, PyLong_FromVoidPtr(*$1));
}

/* ---- native rdma-core objects: their address as an int (since 1.1) ------- */
%typemap(in, numinputs=0, noblock=1) void **RSHARE_NATIVE_OUT (void *addr = NULL) {
	$1 = &addr;
}
%typemap(argout, noblock=1) void **RSHARE_NATIVE_OUT {
	$result = SWIG_Python_AppendOutput($result, PyLong_FromVoidPtr(*$1));
}

/* ---- writable memory in (an MR's): any writable buffer (bytearray, mmap,
 * memoryview, numpy array). The package keeps the object, and an exported
 * view of it, alive while the MR is registered (since 1.1). ---------------- */
%typemap(in, noblock=1) (void *RSHARE_MEM, size_t RSHARE_MEMLEN) (Py_buffer mem = {0}) {
	if (PyObject_GetBuffer($input, &mem, PyBUF_WRITABLE) < 0)
		SWIG_fail;
	$1 = mem.buf;
	$2 = (size_t)mem.len;
}
%typemap(freearg, noblock=1) (void *RSHARE_MEM, size_t RSHARE_MEMLEN) {
	if (mem$argnum.obj)
		PyBuffer_Release(&mem$argnum);
}

/* ---- n bytes read (device memory): an int in, bytes out (since 1.1) ------ */
%typemap(in, noblock=1) (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) (PyObject *out = NULL) {
	{
		Py_ssize_t n = PyLong_AsSsize_t($input);
		if (n < 0) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError, "a negative byte count");
			SWIG_fail;
		}
		out = PyBytes_FromStringAndSize(NULL, n);
		if (!out)
			SWIG_fail;
		$1 = PyBytes_AS_STRING(out);
		$2 = (size_t)n;
	}
}
%typemap(argout, noblock=1) (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) {
	$result = SWIG_Python_AppendOutput($result, out$argnum);
	out$argnum = NULL;
}
%typemap(freearg, noblock=1) (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) {
	Py_XDECREF(out$argnum);
}

/* ---- extra fds of a channel message (since 1.2): a sequence of ints in, a
 * list of ints (the caller's to close) out -------------------------------- */
%typemap(in, noblock=1) (const int *RSHARE_FDS, size_t RSHARE_NFDS)
	(int fds[RSHARE_CHANNEL_FDS_MAX + 1]) {
	{
		PyObject *seq = PySequence_Fast($input, "fds must be a sequence of ints");
		Py_ssize_t n;

		if (!seq)
			SWIG_fail;
		n = PySequence_Fast_GET_SIZE(seq);
		if (n > RSHARE_CHANNEL_FDS_MAX + 1)
			n = RSHARE_CHANNEL_FDS_MAX + 1; /* the C side refuses: too many */
		for (Py_ssize_t i = 0; i < n; i++) {
			long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));

			if (v == -1 && PyErr_Occurred()) {
				Py_DECREF(seq);
				SWIG_fail;
			}
			fds[i] = v < INT_MIN || v > INT_MAX ? -1 : (int)v;
		}
		$1 = fds;
		$2 = (size_t)(PySequence_Fast_GET_SIZE(seq));
		if ($2 > RSHARE_CHANNEL_FDS_MAX + 1)
			$2 = RSHARE_CHANNEL_FDS_MAX + 1;
		Py_DECREF(seq);
	}
}
%typemap(in, numinputs=0, noblock=1) (int *RSHARE_FDS_OUT, size_t RSHARE_FDS_CAP, size_t *RSHARE_NFDS)
	(int fds[RSHARE_CHANNEL_FDS_MAX], size_t nfds = 0) {
	$1 = fds;
	$2 = RSHARE_CHANNEL_FDS_MAX;
	$3 = &nfds;
}
%typemap(argout, noblock=1) (int *RSHARE_FDS_OUT, size_t RSHARE_FDS_CAP, size_t *RSHARE_NFDS) {
	{
		PyObject *list = PyList_New(0);

		for (size_t i = 0; list && i < *$3 && i < $2; i++) {
			PyObject *v = PyLong_FromLong($1[i]);

			if (!v || PyList_Append(list, v) < 0)
				Py_CLEAR(list);
			Py_XDECREF(v);
		}
		if (!list) {
			for (size_t i = 0; i < *$3 && i < $2; i++)
				close($1[i]);
			SWIG_fail;
		}
		$result = SWIG_Python_AppendOutput($result, list);
	}
}
