/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Types of the ABI table that abi/tools/manifest_to_c.py generates from the
 * manifest (abi/rshare.abi.json) for the libffi harness. */
#ifndef RSHARE_FFI_ABI_TABLE_TYPES_H
#define RSHARE_FFI_ABI_TABLE_TYPES_H

/* The libffi class of a parameter or return value. */
enum abi_ffi { ABI_VOID, ABI_SINT, ABI_SIZE_T, ABI_UINT32, ABI_UINT64, ABI_POINTER };

struct abi_param {
	const char *name;
	const char *type; /* the C type as declared, e.g. "const rshare_pd *" */
	enum abi_ffi ffi;
};

/* The most parameters a function has (abi/tools/manifest_to_c.py checks). */
#define ABI_MAX_PARAMS 12

struct abi_fn {
	const char *name;
	const char *version; /* symbol version node, e.g. "RSHARE_1.0" */
	const char *ret_type;
	enum abi_ffi ret;
	int nparams;
	struct abi_param params[ABI_MAX_PARAMS];
};

struct abi_const {
	const char *enum_name;
	const char *name;
	long long value;
};

#endif
