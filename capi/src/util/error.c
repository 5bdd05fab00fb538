/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "util/error.h"
#include "util/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RS_ERRBUF 384

static __thread char rs_msg[RS_ERRBUF];
static __thread int rs_errno;
/* Set while rs_msg has not yet been prefixed with a function name. */
static __thread int rs_unprefixed;

int rs_fail(int status, int errnum, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rs_msg, sizeof(rs_msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (errnum && (size_t)n < sizeof(rs_msg)) {
		char ebuf[128];
		/* GNU strerror_r returns a static or ebuf-backed string. */
		const char *txt = strerror_r(errnum, ebuf, sizeof(ebuf));
		snprintf(rs_msg + n, sizeof(rs_msg) - (size_t)n, " (%s)", txt);
	}
	rs_errno = errnum;
	rs_unprefixed = 1;
	return status;
}

int rs_fail_context(int status, const char *fmt, ...)
{
	char ctx[128];
	va_list ap;
	int n;

	if (!rs_unprefixed)
		return status;
	va_start(ap, fmt);
	n = vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	if (n <= 0)
		return status;
	if ((size_t)n >= sizeof(ctx))
		n = sizeof(ctx) - 1;
	/* Shift the cause right and put the context in front of it. */
	memmove(rs_msg + n, rs_msg, sizeof(rs_msg) - (size_t)n);
	rs_msg[sizeof(rs_msg) - 1] = '\0';
	memcpy(rs_msg, ctx, (size_t)n);
	return status;
}

int rs_fail_in(const char *func, int status)
{
	size_t flen = strlen(func);

	if (!rs_unprefixed) {
		/* No cause was recorded for this failure: say what we know
		 * rather than leave an older message in place. */
		rs_errno = 0;
		snprintf(rs_msg, sizeof(rs_msg), "%s: %s", func, rs_status_text(status));
		return status;
	}
	rs_unprefixed = 0;
	if (flen + 2 < sizeof(rs_msg)) {
		/* Shift the cause right and put "func: " in front of it. */
		memmove(rs_msg + flen + 2, rs_msg, sizeof(rs_msg) - flen - 2);
		rs_msg[sizeof(rs_msg) - 1] = '\0';
		memcpy(rs_msg, func, flen);
		rs_msg[flen] = ':';
		rs_msg[flen + 1] = ' ';
	}
	return status;
}

const char *rs_last_error(void)
{
	return rs_msg;
}

int rs_last_errno(void)
{
	return rs_errno;
}
