/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The ABI's (buf, cap, len) convention for variable-size output, in one
 * place: a NULL or too-small buffer gives RSHARE_E_NOSPACE with *len set to
 * the size needed, and nothing is written to buf. */
#ifndef RSHARE_UTIL_COPYOUT_H
#define RSHARE_UTIL_COPYOUT_H

#include <stddef.h>

/* Copy n produced bytes out. */
int rs_copy_out(const void *src, size_t n, void *buf, size_t cap, size_t *len);
/* The same for a string: n excludes the NUL, which is always written. */
int rs_copy_str(const char *src, size_t n, char *buf, size_t cap, size_t *len);

#endif
