/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The two halves of the libffi conformance harness (tests/ffi). */
#ifndef RSHARE_FFI_HARNESS_H
#define RSHARE_FFI_HARNESS_H

/* The full sharing scenario on sim0, across two processes. */
void run_scenario(void);
/* Every function with NULL/stale/garbage handles and NULL/small buffers. */
void run_sweep(void);

#endif
