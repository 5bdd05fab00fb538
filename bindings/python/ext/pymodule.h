/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The hand-written C parts of the compiled module rshare._rshare, beside
 * what SWIG generates from rshare.i:
 *   errors.c   the exception classes a negative status raises;
 *   memory.c   the base type of Buffer and Var: buffer protocol, DLPack;
 *   objects.c  the C base types of Device, PD and Var (handle, owner,
 *              finalization in tp_dealloc, the import fast path, what a
 *              forked child owns);
 *   wait.c     the blocking channel calls: interruptible, GIL released,
 *              honouring the socket's timeout;
 *   broker.c   the broker calls (blocking too: GIL released, attach
 *              interruptible).
 * rshare_python.i calls rs_py_init() from the module's init function.
 */
#ifndef RSHARE_PYMODULE_H
#define RSHARE_PYMODULE_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <stdbool.h>

#define RS_PY_HIDDEN __attribute__((visibility("hidden")))

/* An rshare object as Python holds it (objects.c; memory.c adds views). */
struct rs_py_obj {
	PyObject_HEAD
	void *h;                          /* the C handle (a checked token) */
	PyObject *dev;                    /* the owner: the Device (an MR: its PD); NULL in a Device */
	PyObject *mapping;                /* what map() made (e.g. (memoryview, mmap)) */
	PyObject *weakrefs;
	struct rs_py_obj *prev, *next;    /* every object alive, for fork_release() */
	unsigned epoch;                   /* the fork epoch it was made in */
	Py_ssize_t exports;               /* buffer-protocol views of its memory (Memory) */
	unsigned char kind;               /* index into kinds[]: 0 device, else rshare_kind */
	bool imported;                    /* from import_*(), not allocated here */
	bool live;                        /* this process still holds the handle */
};


/* errors.c: raise the class registered for status (< 0), with
 * rshare_last_error() as the message; must run right after the failing
 * call, on the same thread. Always returns NULL. */
RS_PY_HIDDEN PyObject *rs_py_raise(int status);
RS_PY_HIDDEN extern PyMethodDef rs_py_error_methods[];

/* objects.c: if o is a Device, PD or Var (or a subclass), store its C
 * handle in *h and return 1; otherwise return 0. */
RS_PY_HIDDEN int rs_py_handle_of(PyObject *o, void **h);
/* A new instance of the class registered for devices, owning h (on
 * failure h is closed and NULL returned with an exception set). */
RS_PY_HIDDEN PyObject *rs_py_wrap_device(void *h);
RS_PY_HIDDEN extern PyMethodDef rs_py_object_methods[];
RS_PY_HIDDEN int rs_py_objects_init(PyObject *module);

/* memory.c: the Memory type (buffer protocol, DLPack; since 1.2), derived
 * from object_base (Object). */
RS_PY_HIDDEN int rs_py_memory_init(PyObject *module, PyTypeObject *object_base);

/* wait.c */
RS_PY_HIDDEN extern PyMethodDef rs_py_wait_methods[];

/* broker.c: the broker calls and their constants (since 1.1). */
RS_PY_HIDDEN extern PyMethodDef rs_py_broker_methods[];
RS_PY_HIDDEN int rs_py_broker_init(PyObject *module);

/* All of the above, added to the module; -1 with an exception on failure. */
RS_PY_HIDDEN int rs_py_init(PyObject *module);

#endif
