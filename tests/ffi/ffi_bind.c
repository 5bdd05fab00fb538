/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* See ffi_bind.h. */
#include <dlfcn.h>
#include <ffi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffi_bind.h"
#include "rshare_abi_table.h" /* generated from the manifest at build time */

#define NFNS (sizeof(abi_fns) / sizeof(abi_fns[0]))

struct bound {
	void *sym;
	ffi_cif cif;
	ffi_type *types[ABI_MAX_PARAMS];
	unsigned calls;
};

static struct bound bound[NFNS];
int ffi_failures;

static ffi_type *ffi_type_of(enum abi_ffi cls)
{
	switch (cls) {
	case ABI_VOID: return &ffi_type_void;
	case ABI_SINT: return &ffi_type_sint;
	case ABI_SIZE_T: return sizeof(size_t) == 8 ? &ffi_type_uint64 : &ffi_type_uint32;
	case ABI_UINT32: return &ffi_type_uint32;
	case ABI_UINT64: return &ffi_type_uint64;
	case ABI_POINTER: return &ffi_type_pointer;
	}
	return NULL;
}

int bind_library(void)
{
	void *lib = dlopen(ABI_LIBRARY, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		printf("FAIL: dlopen(%s): %s\n", ABI_LIBRARY, dlerror());
		return -1;
	}
	for (size_t i = 0; i < NFNS; i++) {
		const struct abi_fn *fn = &abi_fns[i];
		struct bound *b = &bound[i];

		/* The versioned lookup is what a binary linked against 1.0 does;
		 * the plain one is what dlsym-based FFIs do. Both must agree. */
		b->sym = dlvsym(lib, fn->name, fn->version);
		if (!b->sym || b->sym != dlsym(lib, fn->name)) {
			printf("FAIL: %s@%s is not the default export of %s\n", fn->name,
			       fn->version, ABI_LIBRARY);
			return -1;
		}
		for (int k = 0; k < fn->nparams; k++)
			b->types[k] = ffi_type_of(fn->params[k].ffi);
		if (ffi_prep_cif(&b->cif, FFI_DEFAULT_ABI, (unsigned)fn->nparams,
				 ffi_type_of(fn->ret), b->types) != FFI_OK) {
			printf("FAIL: ffi_prep_cif(%s)\n", fn->name);
			return -1;
		}
	}
	return 0;
}

size_t abi_fn_count(void)
{
	return NFNS;
}

const struct abi_fn *abi_fn_at(size_t i)
{
	return i < NFNS ? &abi_fns[i] : NULL;
}

size_t abi_const_count(void)
{
	return sizeof(abi_consts) / sizeof(abi_consts[0]);
}

const struct abi_const *abi_const_at(size_t i)
{
	return i < abi_const_count() ? &abi_consts[i] : NULL;
}

const char *abi_version(void)
{
	return ABI_VERSION;
}

static size_t index_of(const char *name)
{
	for (size_t i = 0; i < NFNS; i++)
		if (strcmp(abi_fns[i].name, name) == 0)
			return i;
	printf("FATAL: %s is not in the manifest\n", name);
	exit(2);
}

/* A harness bug (wrong arity or argument class) is fatal: continuing would
 * make libffi read the wrong number of bytes. */
static ffi_arg call_raw(const char *name, const ffi_val *args, int n, enum abi_ffi ret)
{
	size_t i = index_of(name);
	const struct abi_fn *fn = &abi_fns[i];
	void *values[ABI_MAX_PARAMS];
	ffi_arg result = 0;

	if (n != fn->nparams || fn->ret != ret) {
		printf("FATAL: harness calls %s with %d args (manifest: %d) or the wrong "
		       "return class\n", name, n, fn->nparams);
		exit(2);
	}
	for (int k = 0; k < n; k++) {
		if (args[k].cls != fn->params[k].ffi) {
			printf("FATAL: harness passes argument %d of %s with the wrong class "
			       "(manifest type: %s)\n", k + 1, name, fn->params[k].type);
			exit(2);
		}
		values[k] = (void *)&args[k].v;
	}
	bound[i].calls++;
	ffi_call(&bound[i].cif, FFI_FN(bound[i].sym), &result, values);
	return result;
}

int call_int(const char *name, const ffi_val *args, int n)
{
	return (int)(ffi_sarg)call_raw(name, args, n, ABI_SINT);
}

void *call_ptr(const char *name, const ffi_val *args, int n)
{
	return (void *)(uintptr_t)call_raw(name, args, n, ABI_POINTER);
}

unsigned call_count(const char *name)
{
	return bound[index_of(name)].calls;
}

int st(const char *name)
{
	for (size_t i = 0; i < sizeof(abi_consts) / sizeof(abi_consts[0]); i++)
		if (strcmp(abi_consts[i].name, name) == 0)
			return (int)abi_consts[i].value;
	printf("FATAL: constant %s is not in the manifest\n", name);
	exit(2);
}

static const char *status_name(int status)
{
	const char *s = call_ptr("rshare_status_name", (const ffi_val[]){ VI(status) }, 1);
	return s ? s : "(null)";
}

static void vreport(const char *file, int line, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void vreport(const char *file, int line, const char *fmt, va_list ap)
{
	const char *base = strrchr(file, '/');

	printf("FAIL (%s:%d): ", base ? base + 1 : file, line);
	vprintf(fmt, ap);
}

int expect_status(const char *file, int line, int got, int want, const char *fmt, ...)
{
	va_list ap;
	const char *err;

	if (got == want)
		return 1;
	err = call_ptr("rshare_last_error", NULL, 0);
	va_start(ap, fmt);
	vreport(file, line, fmt, ap);
	va_end(ap);
	printf(": got %s (%d), want %s (%d); last error: %s\n", status_name(got), got,
	       status_name(want), want, err ? err : "(null)");
	ffi_failures++;
	return 0;
}

int expect_true(const char *file, int line, int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return 1;
	va_start(ap, fmt);
	vreport(file, line, fmt, ap);
	va_end(ap);
	printf("\n");
	ffi_failures++;
	return 0;
}
