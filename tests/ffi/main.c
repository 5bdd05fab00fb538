/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libffi conformance harness for librshare.so.1.
 *
 * Drives the library exactly as a dynamic-language FFI would: dlopen by
 * soname, symbols and signatures from the ABI manifest (abi/rshare.abi.json,
 * compiled into a table at build time), every call through ffi_call. First
 * the full sharing scenario on sim0 (two processes), then the misuse sweep.
 * Passes only if every expectation holds and every exported function was
 * called at least once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ffi_bind.h"
#include "harness.h"

int main(void)
{
	unsigned total = 0;

	alarm(120); /* a hang is a failure, never a stuck CI job */
	unsetenv("RSHARE_SIM"); /* sim0 must be visible */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (bind_library())
		return 1;
	run_scenario();
	run_sweep();
	for (size_t i = 0; i < abi_fn_count(); i++) {
		const char *name = abi_fn_at(i)->name;

		EXPECT_TRUE(call_count(name) > 0, "%s was never called", name);
		total += call_count(name);
	}
	if (ffi_failures) {
		printf("FAILED: %d expectation(s)\n", ffi_failures);
		return 1;
	}
	printf("OK: %zu functions, %u calls through ffi_call, all statuses as documented\n",
	       abi_fn_count(), total);
	return 0;
}
