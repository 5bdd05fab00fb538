/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "copyout.h"

#include <string.h>

#include "rshare/rshare.h"
#include "util/error.h"

int rs_copy_out(const void *src, size_t n, void *buf, size_t cap, size_t *len)
{
	if (!len)
		return rs_fail(RSHARE_E_INVAL, 0, "len is NULL");
	if (!buf || cap < n) {
		*len = n;
		return rs_fail(RSHARE_E_NOSPACE, 0, "buffer of %zu bytes too small, %zu needed",
			       buf ? cap : 0, n);
	}
	memcpy(buf, src, n);
	*len = n;
	return RSHARE_OK;
}

int rs_copy_str(const char *src, size_t n, char *buf, size_t cap, size_t *len)
{
	if (!len)
		return rs_fail(RSHARE_E_INVAL, 0, "len is NULL");
	if (!buf || cap < n + 1) {
		*len = n;
		return rs_fail(RSHARE_E_NOSPACE, 0,
			       "buffer of %zu bytes too small, %zu needed (with NUL)",
			       buf ? cap : 0, n + 1);
	}
	memcpy(buf, src, n);
	buf[n] = '\0';
	*len = n;
	return RSHARE_OK;
}
