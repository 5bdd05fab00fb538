/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Thread-local diagnostics behind rshare_last_error()/rshare_last_errno().
 * Nothing here allocates: messages are formatted into a per-thread buffer.
 */
#ifndef RSHARE_UTIL_ERROR_H
#define RSHARE_UTIL_ERROR_H

/* Record a failure: status is returned unchanged so callers can write
 * `return rs_fail(RSHARE_E_NOT_FOUND, ENOENT, "handle %u ...", h);`.
 * errnum (0 if none) is appended as its strerror text and kept for
 * rshare_last_errno(). */
int rs_fail(int status, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Put context (e.g. which fd the caller passed) in front of the cause just
 * recorded by rs_fail(), before RS_RETURN adds the function's name: lower
 * layers then need not know what the caller called the thing they were
 * given. No-op when no cause is pending. Returns status. */
int rs_fail_context(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefix the current message with the public function's name, once.
 * Called only on failure paths (see RS_RETURN). Returns status. */
int rs_fail_in(const char *func, int status);

/* Every public function returns through this, so failures name their
 * entry point at no cost to the success path. */
#define RS_RETURN(status) \
	do { int rs_s_ = (status); \
	     return rs_s_ < 0 ? rs_fail_in(__func__, rs_s_) : rs_s_; } while (0)

const char *rs_last_error(void);
int rs_last_errno(void);

#endif
