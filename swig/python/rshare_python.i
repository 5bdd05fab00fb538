/*
 * Python typemaps for the abstract patterns named in ../rshare.i.
 *
 * The low-level module (rshare._rshare) is plain and fast: handles are
 * Python ints (the C side generation-checks every token, so any int is
 * safe to pass), blobs are bytes, sized outputs come back as bytes/str and
 * a negative status raises the rshare.Error subclass the pure-Python
 * package registered for it. The package (bindings/python/rshare) builds
 * the objects users see on top of this.
 */

/* ---- the interpreter lock -------------------------------------------------
 * The module is built with -threads, but only the calls that may block keep
 * the lock released: every other call returns in well under a microsecond,
 * less than releasing and taking back the lock would cost. */
%feature("nothread", "1");
%feature("nothread", "0") rshare_channel_send;
%feature("nothread", "0") rshare_channel_recv;

/* ---- errors -------------------------------------------------------------- */
%{
#include <string.h>

/* Exception classes indexed by -status, registered once at import by
 * rshare/_errors.py (built from rshare_status_name(), so names never drift). */
static PyObject *rshare_py_error_classes;

/* Raise the registered class for status with rshare_last_error() as the
 * message; must run right after the failing call, on the same thread. */
static void rshare_py_raise(int status)
{
	const char *msg = rshare_last_error();
	int err = rshare_last_errno();
	PyObject *cls = NULL, *text, *exc;

	if (!msg || !*msg)
		msg = rshare_strerror(status);
	if (rshare_py_error_classes && -status < PyTuple_GET_SIZE(rshare_py_error_classes))
		cls = PyTuple_GET_ITEM(rshare_py_error_classes, -status);
	text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
	if (!text)
		return;
	if (!cls || cls == Py_None) {
		/* Only the raw module without the package gets here. */
		PyErr_Format(PyExc_RuntimeError, "%s: %U", rshare_status_name(status), text);
		Py_DECREF(text);
		return;
	}
	exc = PyObject_CallFunction(cls, "Oii", text, status, err);
	Py_DECREF(text);
	if (exc) {
		PyErr_SetObject(cls, exc);
		Py_DECREF(exc);
	}
}
%}

%rename(_set_error_classes) rshare_py_set_error_classes;
%inline %{
/* Register the exception classes (a tuple indexed by -status). */
static PyObject *rshare_py_set_error_classes(PyObject *classes)
{
	if (!PyTuple_Check(classes)) {
		PyErr_SetString(PyExc_TypeError, "expected a tuple of exception classes");
		return NULL;
	}
	Py_INCREF(classes);
	Py_XSETREF(rshare_py_error_classes, classes);
	Py_RETURN_NONE;
}
%}

%typemap(out, noblock=1) int RSHARE_STATUS {
	if ($1 < 0) {
		rshare_py_raise($1);
		SWIG_fail;
	}
	$result = SWIG_Py_Void();
}

/* ---- handles: ints in, ints out ------------------------------------------ */
%typemap(in, noblock=1) SWIGTYPE *RSHARE_HANDLE {
	if ($input == Py_None) {
		$1 = NULL;
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
