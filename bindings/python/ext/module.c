/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The hand-written parts of rshare._rshare, added to the module SWIG made
 * (see pymodule.h for what each file does). */
#include "pymodule.h"

int rs_py_init(PyObject *module)
{
	if (PyModule_AddFunctions(module, rs_py_error_methods) < 0 ||
	    PyModule_AddFunctions(module, rs_py_object_methods) < 0 ||
	    PyModule_AddFunctions(module, rs_py_wait_methods) < 0 ||
	    rs_py_broker_init(module) < 0)
		return -1;
	return rs_py_objects_init(module);
}
