/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The C base types of the package's classes: rshare._rshare.Context (base
 * of rshare.Device) and rshare._rshare.Object (base of rshare.PD, rshare.Var
 * and the kinds to come). They hold the C handle, the owning Device and the
 * state, and release the handle in tp_dealloc: no Python-level __del__, so
 * making and dropping an object costs about what the two C calls cost
 * (tools/bench_python.py measures it against cffi).
 *
 * Lifetime rules (the package's docs repeat them):
 *  - an object holds a reference to its Device, so the device outlives it;
 *  - free() destroys for every process, unimport() releases this process's
 *    handle; garbage collection only ever unimports (closes a Device);
 *  - as a context manager an object is freed on exit if it was allocated
 *    here and unimported if imported; a Device is closed.
 *
 * Fork: a child made by fork() inherits the parent's objects (the Python
 * objects and, in its copy of the C handle table, their handles). What it
 * inherited is the parent's, never the child's to destroy: when the child
 * closes an inherited Device, the handles it inherited on that device are
 * released locally first (unimport: the shared objects live on), so the
 * usual `with dev, dev.import_pd(blob) as pd:` works in a fork worker just
 * as in a spawned one. Objects the child made itself still make close()
 * raise Busy. Inherited objects are told apart by the fork epoch they were
 * made in (a counter a pthread_atfork child handler increments: no getpid()
 * system call on the hot path).
 */
#include "pymodule.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <structmember.h>

#include "rshare/rshare.h"


/* ---- the per-kind C calls ---------------------------------------------- */
struct kind_ops {
	int owner;                        /* the kind of the owner: KIND_DEVICE, or PD for MRs */
	int (*import)(void *owner, const void *blob, size_t len, void **out);
	int (*unimport)(void *h);         /* close, for a device */
	int (*free)(void *h);
	PyTypeObject *cls;                /* the package's class, see register_class() */
};

static int device_close_raw(void *h) { return rshare_device_close(h); }

/* rshare_<kind>_import under the table's type-erased signature: the kinds
 * differ only in their handle types, which C converts from and to void *
 * (the owner: a device, or a PD for an MR). */
#define IMPORT_ADAPTER(kind)                                                        \
	static int kind##_import(void *owner, const void *blob, size_t len, void **out) \
	{                                                                           \
		rshare_##kind *h;                                                   \
		int status = rshare_##kind##_import(owner, blob, len, &h);          \
                                                                                    \
		if (!status)                                                        \
			*out = h;                                                   \
		return status;                                                      \
	}
IMPORT_ADAPTER(pd)
IMPORT_ADAPTER(var)
IMPORT_ADAPTER(mr)
IMPORT_ADAPTER(dm)
#undef IMPORT_ADAPTER

static int pd_unimport(void *h) { return rshare_pd_unimport(h); }
static int pd_free(void *h) { return rshare_pd_free(h); }
static int var_unimport(void *h) { return rshare_var_unimport(h); }
static int var_free(void *h) { return rshare_var_free(h); }
static int mr_unimport(void *h) { return rshare_mr_unimport(h); }
static int mr_dereg(void *h) { return rshare_mr_dereg(h); }
static int dm_unimport(void *h) { return rshare_dm_unimport(h); }
static int dm_free(void *h) { return rshare_dm_free(h); }

/* A buffer is imported with its fd: rshare/_objects.py calls buf_import and
 * _wrap; this table only releases it. */
static int buf_unimport(void *h) { return rshare_buf_unimport(h); }
static int buf_free(void *h) { return rshare_buf_free(h); }

#define KIND_DEVICE 0
#define KINDS 6 /* device, then enum rshare_kind: PD, VAR, MR, DM, BUF */

static struct kind_ops kinds[KINDS] = {
	[KIND_DEVICE] = { -1, NULL, device_close_raw, NULL, NULL },
	[RSHARE_KIND_PD] = { KIND_DEVICE, pd_import, pd_unimport, pd_free, NULL },
	[RSHARE_KIND_VAR] = { KIND_DEVICE, var_import, var_unimport, var_free, NULL },
	[RSHARE_KIND_MR] = { RSHARE_KIND_PD, mr_import, mr_unimport, mr_dereg, NULL },
	[RSHARE_KIND_DM] = { KIND_DEVICE, dm_import, dm_unimport, dm_free, NULL },
	[RSHARE_KIND_BUF] = { RSHARE_KIND_PD, NULL, buf_unimport, buf_free, NULL },
};

/* "device", or the library's name of the kind ("pd", ...). */
static const char *kind_name(int kind)
{
	return kind == KIND_DEVICE ? "device" : rshare_kind_name(kind);
}

/* The Device an object lives on: its owner, or its owner's (an MR's PD's). */
static PyObject *device_of(const struct rs_py_obj *o)
{
	const struct rs_py_obj *owner = (const struct rs_py_obj *)o->dev;

	if (!owner)
		return NULL;
	return owner->kind == KIND_DEVICE ? (PyObject *)owner : owner->dev;
}

/* ---- fork epochs and the list of live objects ---------------------------- */
static volatile unsigned fork_epoch;
static struct rs_py_obj all_objects = { .prev = &all_objects, .next = &all_objects };

static void after_fork_in_child(void) { fork_epoch++; }

/* The list is only touched with the interpreter lock held. */
static void link_object(struct rs_py_obj *o)
{
	o->next = &all_objects;
	o->prev = all_objects.prev;
	all_objects.prev->next = o;
	all_objects.prev = o;
}

static void unlink_object(struct rs_py_obj *o)
{
	if (o->next) {
		o->prev->next = o->next;
		o->next->prev = o->prev;
		o->prev = o->next = NULL;
	}
}

/* ---- mappings ----------------------------------------------------------- */
/* Release what map() made: each memoryview is released and each mmap
 * closed, in order, so no view can reach unmapped memory. A BufferError
 * (derived views still hold the mapping, which then stays mapped until they
 * go) is not a failure; with quiet set nothing is. */
static int release_one(PyObject *item, bool quiet)
{
	PyObject *r = PyObject_CallMethod(item, PyMemoryView_Check(item) ? "release" : "close",
					  NULL);

	if (r) {
		Py_DECREF(r);
		return 0;
	}
	if (quiet || PyErr_ExceptionMatches(PyExc_BufferError)) {
		PyErr_Clear();
		return 0;
	}
	return -1;
}

static int release_mapping(PyObject *mapping, bool quiet)
{
	int rc = 0;

	if (PyTuple_Check(mapping)) {
		for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mapping); i++)
			if (release_one(PyTuple_GET_ITEM(mapping, i), quiet) < 0)
				rc = -1;
	} else if (mapping != Py_None) {
		rc = release_one(mapping, quiet);
	}
	return rc;
}

static int drop_mapping(struct rs_py_obj *o, bool quiet)
{
	PyObject *mapping = o->mapping;
	int rc;

	if (!mapping)
		return 0;
	o->mapping = NULL;
	rc = release_mapping(mapping, quiet);
	Py_DECREF(mapping);
	return rc;
}

/* ---- devices: close, and what a forked child owns ------------------------ */
/* Release, locally, every handle this (forked) process inherited on dev.
 * The walk makes no call that could run Python code (which could free
 * objects under it); the mappings are collected and released after it. */
static void fork_release(struct rs_py_obj *dev)
{
	PyObject *mappings = PyList_New(0);

	/* Objects owned by objects (MRs) first: a PD with live MRs is busy. */
	for (int pass = 0; pass < 2; pass++) {
		for (struct rs_py_obj *o = all_objects.next; o != &all_objects; o = o->next) {
			bool nested = o->dev && o->dev != (PyObject *)dev;

			/* Memory with live views stays mapped (the device stays busy). */
			if (device_of(o) != (PyObject *)dev || !o->live || o->exports ||
			    o->epoch == fork_epoch || nested != (pass == 0))
				continue;
			kinds[o->kind].unimport(o->h);
			o->live = false;
			if (o->mapping && mappings && PyList_Append(mappings, o->mapping) == 0)
				Py_CLEAR(o->mapping);
		}
	}
	if (mappings) {
		for (Py_ssize_t i = 0; i < PyList_GET_SIZE(mappings); i++)
			release_mapping(PyList_GET_ITEM(mappings, i), true);
		Py_DECREF(mappings);
	} else {
		PyErr_Clear();
	}
}

/* Does this process hold live objects of its own (not inherited) on dev? */
static bool has_own_objects(struct rs_py_obj *dev)
{
	for (struct rs_py_obj *o = all_objects.next; o != &all_objects; o = o->next)
		if (device_of(o) == (PyObject *)dev && o->live && o->epoch == fork_epoch)
			return true;
	return false;
}

static int device_close(struct rs_py_obj *dev)
{
	int status = rshare_device_close(dev->h);

	if (dev->epoch == fork_epoch)
		return status;
	/* An inherited device in a forked child. If the C library already
	 * released what the child inherited, only mark those objects released;
	 * if it refused, release them here and retry, unless objects the child
	 * made itself are live (then the refusal stands and nothing changes). */
	if (status == RSHARE_OK) {
		fork_release(dev);
	} else if (status == RSHARE_E_BUSY && !has_own_objects(dev)) {
		fork_release(dev);
		status = rshare_device_close(dev->h);
	}
	return status;
}

/* ---- construction and destruction --------------------------------------- */
static PyTypeObject object_type, context_type;

/* A new instance of kind's registered class owning handle h; on failure the
 * handle is released (nothing leaks) and NULL returned. */
static PyObject *wrap(int kind, PyObject *dev, void *h, bool imported)
{
	PyTypeObject *cls = kinds[kind].cls;
	struct rs_py_obj *o;

	if (!cls) {
		PyErr_Format(PyExc_RuntimeError, "no class registered for rshare kind %s",
			     kind_name(kind));
		o = NULL;
	} else {
		o = (struct rs_py_obj *)cls->tp_alloc(cls, 0);
	}
	if (!o) {
		if (kind == KIND_DEVICE)
			rshare_device_close(h);
		else
			kinds[kind].unimport(h);
		return NULL;
	}
	o->h = h;
	Py_XINCREF(dev);
	o->dev = dev;
	o->kind = (unsigned char)kind;
	o->imported = imported;
	o->live = true;
	o->epoch = fork_epoch;
	link_object(o);
	return (PyObject *)o;
}

/* Is owner what objects of kind live in (a Device, or a PD for MRs)? */
static bool owner_fits(PyObject *owner, int kind)
{
	int want = kinds[kind].owner;

	if (want == KIND_DEVICE)
		return PyObject_TypeCheck(owner, &context_type);
	return PyObject_TypeCheck(owner, &object_type) &&
	       ((struct rs_py_obj *)owner)->kind == want;
}

static int kind_arg(PyObject *arg, int *kind);
static PyObject *import_into(PyObject *self, PyObject *blob, int kind);

/* self._import(kind, blob): import_*() for any kind that lives in self. */
static PyObject *generic_import(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	int kind;

	if (nargs != 2)
		return PyErr_Format(PyExc_TypeError, "_import(kind, blob)");
	if (kind_arg(args[0], &kind) < 0)
		return NULL;
	if (kind == KIND_DEVICE || !owner_fits(self, kind))
		return PyErr_Format(PyExc_TypeError, "%s objects are not imported into %.100s",
				    kind_name(kind), Py_TYPE(self)->tp_name);
	if (!kinds[kind].import) /* a buffer: its blob and its memory fd */
		return PyErr_Format(PyExc_TypeError, "%s objects are imported with their fd "
				    "(PD.import_buffer(blob, fd))", kind_name(kind));
	return import_into(self, args[1], kind);
}

PyObject *rs_py_wrap_device(void *h)
{
	return wrap(KIND_DEVICE, NULL, h, false);
}

static void obj_dealloc(PyObject *self)
{
	struct rs_py_obj *o = (struct rs_py_obj *)self;

	if (o->weakrefs)
		PyObject_ClearWeakRefs(self);
	if (o->mapping || (o->live && o->kind == KIND_DEVICE)) {
		/* Python code may run (releasing views) or an error be set. */
		PyObject *type, *value, *tb;

		PyErr_Fetch(&type, &value, &tb);
		drop_mapping(o, true);
		if (o->live && o->kind == KIND_DEVICE)
			device_close(o); /* Busy: the OS closes the fd at exit */
		else if (o->live)
			kinds[o->kind].unimport(o->h);
		PyErr_Restore(type, value, tb);
	} else if (o->live) {
		kinds[o->kind].unimport(o->h); /* local release only, never free */
	}
	o->live = false;
	unlink_object(o);
	Py_CLEAR(o->dev);
	Py_TYPE(self)->tp_free(self);
}

/* A Device dropped while open (not closed by close() or a with block):
 * ResourceWarning, as for an unclosed socket or file (shown under
 * `python -X dev`). An inherited one (a forked child) is its parent's. */
static void context_finalize(PyObject *self)
{
	struct rs_py_obj *o = (struct rs_py_obj *)self;
	PyObject *type, *value, *tb;

	if (!o->live || o->epoch != fork_epoch)
		return;
	PyErr_Fetch(&type, &value, &tb);
	if (PyErr_ResourceWarning(self, 1, "unclosed rshare.Device (handle %p); close it "
				  "or use it in a with block", o->h) < 0)
		PyErr_WriteUnraisable(self);
	PyErr_Restore(type, value, tb);
}

/* __exit__ with an exception in flight (args[1]): the user's exception
 * must propagate, so a failed cleanup is reported on it (a note, shown
 * with its traceback; a RuntimeWarning before Python 3.11), never raised
 * in its place. Without one, the cleanup's failure is raised. */
static PyObject *exit_with(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			   PyObject *(*cleanup)(PyObject *, PyObject *))
{
	PyObject *done = cleanup(self, NULL), *type, *value, *tb, *note, *r;

	if (done || nargs < 2 || args[1] == Py_None)
		return done;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	note = PyUnicode_FromFormat("rshare: leaving the with block, %s.__exit__ could not "
				    "release it: %s: %S", Py_TYPE(self)->tp_name,
				    value ? Py_TYPE(value)->tp_name : "?", value ? value : Py_None);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	if (!note)
		return NULL;
	if (PyObject_HasAttrString(args[1], "add_note"))
		r = PyObject_CallMethod(args[1], "add_note", "O", note);
	else
		r = PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "%U", note) < 0 ? NULL
									: (Py_INCREF(Py_None), Py_None);
	Py_DECREF(note);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_NONE;
}

static PyObject *no_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	(void)args;
	(void)kwargs;
	if (PyType_IsSubtype(type, &context_type))
		PyErr_Format(PyExc_TypeError, "open a %s with rshare.open(), Device.from_fd() "
			     "or rshare.recv()", type->tp_name);
	else
		PyErr_Format(PyExc_TypeError, "create a %s with a Device's alloc or import "
			     "methods (e.g. dev.alloc_pd(), dev.import_pd(blob))", type->tp_name);
	return NULL;
}

/* ---- Object: PD, Var, ... ------------------------------------------------ */
/* Refuse to release memory that views still reach (BufferError, as
 * mmap.close() does): never a view onto unmapped memory. */
static int check_no_views(const struct rs_py_obj *o)
{
	if (!o->exports)
		return 0;
	PyErr_Format(PyExc_BufferError,
		     "%zd view(s) of this %s's memory are alive (memoryview, numpy array, "
		     "DLPack tensor): release them first", o->exports, kind_name(o->kind));
	return -1;
}

/* unimport() and free(): no view may reach the memory, this process's
 * mapping goes first, then the handle with the kind's release call. */
static PyObject *release_handle(struct rs_py_obj *o, int (*release)(void *h))
{
	int status;

	if (check_no_views(o) < 0)
		return NULL;
	if (o->mapping && drop_mapping(o, false) < 0)
		return NULL;
	status = release(o->h);
	if (status)
		return rs_py_raise(status);
	o->live = false;
	Py_RETURN_NONE;
}

static PyObject *object_unimport(PyObject *self, PyObject *unused)
{
	struct rs_py_obj *o = (struct rs_py_obj *)self;

	(void)unused;
	return release_handle(o, kinds[o->kind].unimport);
}

static PyObject *object_free(PyObject *self, PyObject *unused)
{
	struct rs_py_obj *o = (struct rs_py_obj *)self;

	(void)unused;
	return release_handle(o, kinds[o->kind].free);
}

static PyObject *object_release_mapping(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (drop_mapping((struct rs_py_obj *)self, false) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *return_self(PyObject *self, PyObject *unused)
{
	(void)unused;
	Py_INCREF(self);
	return self;
}

static PyObject *object_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	struct rs_py_obj *o = (struct rs_py_obj *)self;

	if (!o->live)
		Py_RETURN_NONE;
	return exit_with(self, args, nargs, o->imported ? object_unimport : object_free);
}

static PyObject *get_handle(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromVoidPtr(((struct rs_py_obj *)self)->h);
}

static PyObject *get_device(PyObject *self, void *unused)
{
	PyObject *dev = ((struct rs_py_obj *)self)->dev;

	(void)unused;
	if (!dev)
		Py_RETURN_NONE;
	Py_INCREF(dev);
	return dev;
}

static PyObject *get_imported(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(((struct rs_py_obj *)self)->imported);
}

static PyObject *get_live(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(((struct rs_py_obj *)self)->live);
}

static PyObject *get_closed(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(!((struct rs_py_obj *)self)->live);
}

static PyMethodDef object_methods[] = {
	{ "unimport", object_unimport, METH_NOARGS,
	  "Release this process's handle; the object lives on for others.\n\n"
	  "Valid on allocated and imported objects alike, and also after another\n"
	  "process freed the object. A second call raises StaleHandleError." },
	{ "free", object_free, METH_NOARGS,
	  "Destroy the object for every process and release the handle.\n\n"
	  "Raises NotFound if another process already destroyed it (the handle\n"
	  "stays live: release it with unimport())." },
	{ "_release_mapping", object_release_mapping, METH_NOARGS,
	  "Release the views and mappings stored in _mapping." },
	{ "_import", (PyCFunction)(void (*)(void))generic_import, METH_FASTCALL,
	  "_import(kind, blob): import an object of kind that lives in this one (an MR in a PD)." },
	{ "__enter__", return_self, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)(void (*)(void))object_exit, METH_FASTCALL,
	  "Free the object if allocated here, unimport it if imported." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef object_getset[] = {
	{ "_h", get_handle, NULL, "The C handle, as an int.", NULL },
	{ "device", get_device, NULL, "The Device this object was allocated on or imported into.",
	  NULL },
	{ "imported", get_imported, NULL,
	  "True if this handle came from import_*(), False if allocated here.", NULL },
	{ "live", get_live, NULL, "False once this process released the handle (free/unimport).",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyMemberDef object_members[] = {
	{ "_mapping", T_OBJECT, offsetof(struct rs_py_obj, mapping), 0,
	  "What map() made, released (memoryviews) or closed (mmaps) in order by "
	  "unimport(), free(), _release_mapping() and collection." },
	{ NULL, 0, 0, 0, NULL }
};

static PyTypeObject object_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rshare._rshare.Object",
	.tp_doc = "Base of the shared objects (PD, Var): a handle, its Device, its state.",
	.tp_basicsize = sizeof(struct rs_py_obj),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_new = no_new,
	.tp_dealloc = obj_dealloc,
	.tp_weaklistoffset = offsetof(struct rs_py_obj, weakrefs),
	.tp_methods = object_methods,
	.tp_getset = object_getset,
	.tp_members = object_members,
};

/* ---- Context: Device ------------------------------------------------------ */
static PyObject *context_close(PyObject *self, PyObject *unused)
{
	struct rs_py_obj *d = (struct rs_py_obj *)self;
	int status;

	(void)unused;
	status = device_close(d);
	if (status)
		return rs_py_raise(status);
	d->live = false;
	Py_RETURN_NONE;
}

static PyObject *context_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	if (!((struct rs_py_obj *)self)->live)
		Py_RETURN_NONE;
	return exit_with(self, args, nargs, context_close);
}

/* import_*(blob) into self (a Device, or a PD for MRs): blob is bytes (the
 * fast path), any buffer, or the text form (str). */
static PyObject *import_into(PyObject *self, PyObject *blob, int kind)
{
	char decoded[RSHARE_BLOB_MAX];
	Py_buffer view = { 0 };
	const void *bytes;
	size_t len;
	void *h;
	int status;

	if (!kinds[kind].cls)
		return PyErr_Format(PyExc_RuntimeError, "no class registered for rshare kind %s",
				    kind_name(kind));
	if (PyBytes_CheckExact(blob)) {
		bytes = PyBytes_AS_STRING(blob);
		len = (size_t)PyBytes_GET_SIZE(blob);
	} else if (PyUnicode_Check(blob)) {
		const char *text = PyUnicode_AsUTF8(blob);

		if (!text)
			return NULL;
		status = rshare_blob_from_text(text, decoded, sizeof(decoded), &len);
		if (status)
			return rs_py_raise(status);
		bytes = decoded;
	} else if (PyObject_CheckBuffer(blob)) {
		if (PyObject_GetBuffer(blob, &view, PyBUF_SIMPLE) < 0)
			return NULL;
		bytes = view.buf;
		len = (size_t)view.len;
	} else {
		PyErr_Format(PyExc_TypeError,
			     "import_%s() argument 'blob' must be bytes-like or str, not %.100s",
			     kind_name(kind), Py_TYPE(blob)->tp_name);
		return NULL;
	}
	status = kinds[kind].import(((struct rs_py_obj *)self)->h, bytes, len, &h);
	if (view.obj)
		PyBuffer_Release(&view);
	if (status)
		return rs_py_raise(status);
	return wrap(kind, self, h, true);
}

static PyObject *context_import_pd(PyObject *self, PyObject *blob)
{
	return import_into(self, blob, RSHARE_KIND_PD);
}

static PyObject *context_import_var(PyObject *self, PyObject *blob)
{
	return import_into(self, blob, RSHARE_KIND_VAR);
}

static PyMethodDef context_methods[] = {
	{ "close", context_close, METH_NOARGS,
	  "Close the context and its fd (objects live on for other processes\n"
	  "sharing it). Raises Busy while this process has live objects on it\n"
	  "and StaleHandleError when already closed. In a child made by fork(),\n"
	  "the objects inherited on this device are first released locally." },
	{ "import_pd", context_import_pd, METH_O,
	  "Import the PD described by ``blob`` (bytes, or its text form)." },
	{ "import_var", context_import_var, METH_O,
	  "Import the VAR described by ``blob`` (bytes, or its text form)." },
	{ "_import", (PyCFunction)(void (*)(void))generic_import, METH_FASTCALL,
	  "_import(kind, blob): import an object of kind (a RSHARE_KIND_*) into this device." },
	{ "__enter__", return_self, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)(void (*)(void))context_exit, METH_FASTCALL,
	  "Close the device if still open." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef context_getset[] = {
	{ "_h", get_handle, NULL, "The C handle, as an int.", NULL },
	{ "closed", get_closed, NULL, "True after a successful close().", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject context_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rshare._rshare.Context",
	.tp_doc = "Base of rshare.Device: a device context handle and its state.",
	.tp_basicsize = sizeof(struct rs_py_obj),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_new = no_new,
	.tp_finalize = context_finalize,
	.tp_dealloc = obj_dealloc,
	.tp_weaklistoffset = offsetof(struct rs_py_obj, weakrefs),
	.tp_methods = context_methods,
	.tp_getset = context_getset,
};

/* ---- module functions ------------------------------------------------------ */
int rs_py_handle_of(PyObject *o, void **h)
{
	if (!PyObject_TypeCheck(o, &object_type) && !PyObject_TypeCheck(o, &context_type))
		return 0;
	*h = ((struct rs_py_obj *)o)->h;
	return 1;
}

static int kind_arg(PyObject *arg, int *kind)
{
	long value = PyLong_AsLong(arg);

	if (value == -1 && PyErr_Occurred())
		return -1;
	if (value < 0 || value >= KINDS || !kinds[value].unimport) {
		PyErr_Format(PyExc_ValueError, "unknown rshare kind %ld", value);
		return -1;
	}
	*kind = (int)value;
	return 0;
}

static PyObject *register_class(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	PyTypeObject *base;
	int kind;

	(void)module;
	if (nargs != 2 || kind_arg(args[0], &kind) < 0)
		return nargs != 2 ? PyErr_Format(PyExc_TypeError, "_register(kind, cls)") : NULL;
	base = kind == KIND_DEVICE ? &context_type : &object_type;
	if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], base))
		return PyErr_Format(PyExc_TypeError, "_register: the class must derive from %s",
				    base->tp_name);
	Py_INCREF(args[1]);
	Py_XSETREF(kinds[kind].cls, (PyTypeObject *)args[1]);
	Py_RETURN_NONE;
}

/* _wrap(kind, owner, handle, imported): the object for a new C handle (from
 * alloc or import); see the docstring below for who owns it on failure. */
static PyObject *wrap_handle(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
	void *h;
	int kind, imported;

	(void)module;
	if (nargs != 4)
		return PyErr_Format(PyExc_TypeError, "_wrap(kind, dev, handle, imported)");
	if (kind_arg(args[0], &kind) < 0)
		return NULL;
	h = PyLong_AsVoidPtr(args[2]);
	if (!h)
		return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "NULL handle");
	imported = PyObject_IsTrue(args[3]);
	if (imported < 0)
		return NULL;
	if (kind == KIND_DEVICE ? args[1] != Py_None : !owner_fits(args[1], kind))
		return PyErr_Format(PyExc_TypeError, "_wrap: the owner of a %s must be %s",
				    kind_name(kind), kind == KIND_DEVICE ? "None"
				    : kinds[kind].owner == KIND_DEVICE ? "a Device" : "a PD");
	return wrap(kind, kind == KIND_DEVICE ? NULL : args[1], h, imported);
}

PyMethodDef rs_py_object_methods[] = {
	{ "_register", (PyCFunction)(void (*)(void))register_class, METH_FASTCALL,
	  "_register(kind, cls): the class made for kind (0: devices, else a RSHARE_KIND_*)." },
	{ "_wrap", (PyCFunction)(void (*)(void))wrap_handle, METH_FASTCALL,
	  "_wrap(kind, owner, handle, imported): an instance of kind's class owning handle,\n"
	  "living in owner (the Device; a PD for MRs). Bad arguments leave the handle to the\n"
	  "caller; if making the object fails (no class registered, no memory) it is released." },
	{ NULL, NULL, 0, NULL }
};

int rs_py_objects_init(PyObject *module)
{
	static bool atfork_registered; /* the interpreter lock is held */

	if (PyType_Ready(&object_type) < 0 || PyType_Ready(&context_type) < 0)
		return -1;
	Py_INCREF(&object_type);
	if (PyModule_AddObject(module, "Object", (PyObject *)&object_type) < 0) {
		Py_DECREF(&object_type);
		return -1;
	}
	Py_INCREF(&context_type);
	if (PyModule_AddObject(module, "Context", (PyObject *)&context_type) < 0) {
		Py_DECREF(&context_type);
		return -1;
	}
	if (PyModule_AddIntConstant(module, "KIND_DEVICE", KIND_DEVICE) < 0 ||
	    rs_py_memory_init(module, &object_type) < 0)
		return -1;
	if (!atfork_registered) {
		errno = pthread_atfork(NULL, NULL, after_fork_in_child);
		if (errno) {
			PyErr_SetFromErrno(PyExc_OSError);
			return -1;
		}
		atfork_registered = true;
	}
	return 0;
}
