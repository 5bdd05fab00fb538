/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A negative status becomes the rshare.Error subclass the package
 * registered for it (rshare/_errors.py builds the table from
 * rshare_status_name(), so names never drift), with rshare_last_error()
 * as the message.
 */
#include "pymodule.h"

#include <string.h>

#include "rshare/rshare.h"

/* Exception classes indexed by -status (a tuple), or NULL before the
 * package registered them (only the raw module then). */
static PyObject *error_classes;

PyObject *rs_py_raise(int status)
{
	const char *msg = rshare_last_error();
	int err = rshare_last_errno();
	PyObject *cls = NULL, *text, *exc;

	if (!msg || !*msg)
		msg = rshare_strerror(status);
	if (error_classes && status < 0 && -status < PyTuple_GET_SIZE(error_classes))
		cls = PyTuple_GET_ITEM(error_classes, -status);
	text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
	if (!text)
		return NULL;
	if (!cls || cls == Py_None) {
		PyErr_Format(PyExc_RuntimeError, "%s: %U", rshare_status_name(status), text);
		Py_DECREF(text);
		return NULL;
	}
	exc = PyObject_CallFunction(cls, "Oii", text, status, err);
	Py_DECREF(text);
	if (exc) {
		PyErr_SetObject(cls, exc);
		Py_DECREF(exc);
	}
	return NULL;
}

static PyObject *set_error_classes(PyObject *module, PyObject *classes)
{
	(void)module;
	if (!PyTuple_Check(classes)) {
		PyErr_Format(PyExc_TypeError,
			     "_set_error_classes() expects a tuple of exception classes, not %.100s",
			     Py_TYPE(classes)->tp_name);
		return NULL;
	}
	Py_INCREF(classes);
	Py_XSETREF(error_classes, classes);
	Py_RETURN_NONE;
}

PyMethodDef rs_py_error_methods[] = {
	{ "_set_error_classes", set_error_classes, METH_O,
	  "Register the exception classes (a tuple indexed by -status)." },
	{ NULL, NULL, 0, NULL }
};
