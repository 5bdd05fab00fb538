/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare._rshare.Memory: the base type of the objects whose memory Python
 * code touches directly (a shared Buffer, a VAR's page, mapped device
 * memory; since 1.2). It
 * adds to Object the buffer protocol (memoryview(buf), numpy.frombuffer,
 * numpy.asarray: zero-copy, at the address the C library maps) and DLPack
 * (__dlpack__/__dlpack_device__, for numpy.from_dlpack and any DLPack
 * consumer).
 *
 * Every view counts in the object's exports (struct rs_py_obj); while one
 * is alive, unimport(), free() and unmap() raise BufferError (as
 * mmap.close() does) and a forked child's device close leaves the object
 * mapped, so no view can ever reach unmapped memory. A view holds a
 * reference to the object, so the collector cannot release it under one.
 */
#include "pymodule.h"

#include <stdint.h>

#include "rshare/rshare.h"

/* The memory of o: the buffer's mapping, the device memory's (rshare_dm_map:
 * Unsupported where the device does not map it), or the VAR's page (mapped
 * by its map(), through Python's mmap module, on first use). */
static int memory_of(struct rs_py_obj *o, void **addr, size_t *len)
{
	Py_buffer page;
	PyObject *view;
	int status;

	if (o->kind == RSHARE_KIND_BUF || o->kind == RSHARE_KIND_DM) {
		uint64_t length = 0;

		status = o->kind == RSHARE_KIND_BUF ? rshare_buf_ptr(o->h, addr, len)
						    : rshare_dm_map(o->h, addr);
		if (!status && o->kind == RSHARE_KIND_DM && !(status = rshare_dm_length(o->h, &length)))
			*len = (size_t)length;
		if (status) {
			rs_py_raise(status);
			return -1;
		}
		return 0;
	}
	view = PyObject_CallMethod((PyObject *)o, "map", NULL); /* Var.map() */
	if (!view)
		return -1;
	if (PyObject_GetBuffer(view, &page, PyBUF_SIMPLE) < 0) {
		Py_DECREF(view);
		return -1;
	}
	*addr = page.buf;
	*len = (size_t)page.len;
	PyBuffer_Release(&page); /* the mapping stays: o->mapping holds it */
	Py_DECREF(view);
	return 0;
}

static int memory_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	struct rs_py_obj *o = (struct rs_py_obj *)self;
	void *addr;
	size_t len;

	view->obj = NULL;
	if (!o->live) {
		PyErr_SetString(PyExc_BufferError, "the handle was released: no memory to view");
		return -1;
	}
	if (memory_of(o, &addr, &len) < 0)
		return -1;
	if (PyBuffer_FillInfo(view, self, addr, (Py_ssize_t)len, 0, flags) < 0)
		return -1;
	o->exports++;
	return 0;
}

static void memory_releasebuffer(PyObject *self, Py_buffer *view)
{
	(void)view;
	((struct rs_py_obj *)self)->exports--;
}

static PyBufferProcs memory_as_buffer = {
	.bf_getbuffer = memory_getbuffer,
	.bf_releasebuffer = memory_releasebuffer,
};

/* ---- DLPack ---------------------------------------------------------------
 * The ABI of dlpack.h (DLPack 0.x, which numpy 1.22+ consumes): a managed
 * tensor in a capsule named "dltensor"; the consumer renames it
 * "used_dltensor" and calls the deleter when done. Ours is a 1-D tensor of
 * uint8 on the CPU that holds a view (an export) of the memory. */
enum { DL_CPU = 1, DL_UINT = 1 };

struct dl_device {
	int32_t device_type, device_id;
};
struct dl_dtype {
	uint8_t code, bits;
	uint16_t lanes;
};
struct dl_tensor {
	void *data;
	struct dl_device device;
	int32_t ndim;
	struct dl_dtype dtype;
	int64_t *shape, *strides;
	uint64_t byte_offset;
};
struct dl_managed {
	struct dl_tensor tensor;
	void *manager_ctx;
	void (*deleter)(struct dl_managed *self);
};

struct dl_holder {
	struct dl_managed managed; /* first: the consumer's pointer is ours */
	int64_t shape;
	Py_buffer view;
};

static void dl_delete(struct dl_managed *managed)
{
	struct dl_holder *h = managed->manager_ctx;
	PyGILState_STATE gil = PyGILState_Ensure(); /* a consumer may call without it */

	PyBuffer_Release(&h->view);
	PyGILState_Release(gil);
	PyMem_RawFree(h);
}

static void dl_capsule_destructor(PyObject *capsule)
{
	/* Renamed "used_dltensor" once consumed: the consumer deletes then. */
	if (PyCapsule_IsValid(capsule, "dltensor")) {
		struct dl_managed *m = PyCapsule_GetPointer(capsule, "dltensor");

		m->deleter(m);
	}
}

static PyObject *memory_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "stream", NULL };
	PyObject *stream = Py_None, *capsule;
	struct dl_holder *h;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:__dlpack__", names, &stream))
		return NULL;
	if (stream != Py_None)
		return PyErr_Format(PyExc_BufferError, "stream must be None for CPU memory");
	h = PyMem_RawCalloc(1, sizeof(*h));
	if (!h)
		return PyErr_NoMemory();
	if (PyObject_GetBuffer(self, &h->view, PyBUF_WRITABLE) < 0) {
		PyMem_RawFree(h);
		return NULL;
	}
	h->shape = (int64_t)h->view.len;
	h->managed.tensor = (struct dl_tensor){
		.data = h->view.buf, .device = { DL_CPU, 0 }, .ndim = 1,
		.dtype = { DL_UINT, 8, 1 }, .shape = &h->shape,
	};
	h->managed.manager_ctx = h;
	h->managed.deleter = dl_delete;
	capsule = PyCapsule_New(&h->managed, "dltensor", dl_capsule_destructor);
	if (!capsule)
		dl_delete(&h->managed);
	return capsule;
}

static PyObject *memory_dlpack_device(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return Py_BuildValue("(ii)", DL_CPU, 0);
}

static PyObject *get_exports(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromSsize_t(((struct rs_py_obj *)self)->exports);
}

static PyMethodDef memory_methods[] = {
	{ "__dlpack__", (PyCFunction)(void (*)(void))memory_dlpack, METH_VARARGS | METH_KEYWORDS,
	  "A DLPack capsule of the memory (1-D uint8 on the CPU, zero-copy), for\n"
	  "numpy.from_dlpack() and other DLPack consumers; counts as a view." },
	{ "__dlpack_device__", memory_dlpack_device, METH_NOARGS,
	  "(kDLCPU, 0): the memory is host memory." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef memory_getset[] = {
	{ "_exports", get_exports, NULL, "Live views of the memory (buffer protocol, DLPack).",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject memory_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rshare._rshare.Memory",
	.tp_doc = "Base of the objects with memory Python touches (Buffer, Var): the "
		  "buffer protocol and DLPack over it.",
	.tp_basicsize = sizeof(struct rs_py_obj),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_as_buffer = &memory_as_buffer,
	.tp_methods = memory_methods,
	.tp_getset = memory_getset,
};

int rs_py_memory_init(PyObject *module, PyTypeObject *object_base)
{
	memory_type.tp_base = object_base;
	if (PyType_Ready(&memory_type) < 0)
		return -1;
	Py_INCREF(&memory_type);
	if (PyModule_AddObject(module, "Memory", (PyObject *)&memory_type) < 0) {
		Py_DECREF(&memory_type);
		return -1;
	}
	return 0;
}
