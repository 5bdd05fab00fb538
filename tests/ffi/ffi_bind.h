/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Calling librshare.so.1 the way a dynamic-language FFI does: dlopen by
 * soname, dlvsym each function at the version node the manifest names, and
 * ffi_call it through a cif built from the manifest's types. Nothing here
 * includes rshare.h or links the library.
 */
#ifndef RSHARE_FFI_BIND_H
#define RSHARE_FFI_BIND_H

#include <stddef.h>
#include <stdint.h>

#include "abi_table_types.h"

/* One argument, tagged with the libffi class the caller means to pass. The
 * tag is checked against the manifest before every call, so the harness
 * cannot silently disagree with the ABI it claims to test. */
typedef struct {
	enum abi_ffi cls;
	union {
		int i;
		size_t z;
		uint32_t u32;
		uint64_t u64;
		void *p;
	} v;
} ffi_val;

#define VI(x) ((ffi_val){ ABI_SINT, { .i = (x) } })
#define VZ(x) ((ffi_val){ ABI_SIZE_T, { .z = (x) } })
#define VU32(x) ((ffi_val){ ABI_UINT32, { .u32 = (x) } })
#define VU64(x) ((ffi_val){ ABI_UINT64, { .u64 = (x) } })
#define VP(x) ((ffi_val){ ABI_POINTER, { .p = (void *)(uintptr_t)(x) } })

#define FFI_ARGS(...) \
	((const ffi_val[]){ __VA_ARGS__ }), \
	(int)(sizeof((const ffi_val[]){ __VA_ARGS__ }) / sizeof(ffi_val))
/* CALLI("rshare_pd_alloc", VP(dev), VP(&pd)) -> the int status. */
#define CALLI(name, ...) call_int(name, FFI_ARGS(__VA_ARGS__))
#define CALLP(name, ...) call_ptr(name, FFI_ARGS(__VA_ARGS__))
#define CALLI0(name) call_int(name, NULL, 0)
#define CALLP0(name) call_ptr(name, NULL, 0)

/* dlopen the library and prepare a cif for every manifest function;
 * returns 0, or prints why and returns -1. */
int bind_library(void);

/* The manifest, as compiled in: functions, constants, library version. */
size_t abi_fn_count(void);
const struct abi_fn *abi_fn_at(size_t i);
size_t abi_const_count(void);
const struct abi_const *abi_const_at(size_t i);
const char *abi_version(void);

int call_int(const char *name, const ffi_val *args, int n);
void *call_ptr(const char *name, const ffi_val *args, int n);
/* How many times name was called through ffi_call. */
unsigned call_count(const char *name);

/* A constant of the manifest by name, e.g. st("RSHARE_E_STALE"). */
int st(const char *name);
#define ST(x) st("RSHARE_" #x)

/* Record one expectation: prints a FAIL line (with the status names and
 * rshare_last_error()) when got != want. Returns got == want. */
int expect_status(const char *file, int line, int got, int want, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
#define EXPECT(got, want, ...) expect_status(__FILE__, __LINE__, (got), (want), __VA_ARGS__)
/* Record a plain truth. */
int expect_true(const char *file, int line, int ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define EXPECT_TRUE(ok, ...) expect_true(__FILE__, __LINE__, (ok), __VA_ARGS__)

/* Failed expectations so far (in this process). */
extern int ffi_failures;

#endif
