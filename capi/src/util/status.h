/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The status table: one list gives every status its name and description. */
#ifndef RSHARE_UTIL_STATUS_H
#define RSHARE_UTIL_STATUS_H

#include "rshare/rshare.h"

/* X(enum constant, one-line description). Keep in enum order, 0 down.
 * Numbers reserved for statuses still being added may leave gaps. */
#define RS_STATUS_LIST(X)                                                        \
	X(RSHARE_OK, "success")                                                  \
	X(RSHARE_E_INVAL, "invalid argument")                                    \
	X(RSHARE_E_NOMEM, "out of memory")                                       \
	X(RSHARE_E_NODEV, "no such device, or not a device context")             \
	X(RSHARE_E_UNSUPPORTED, "operation not supported by the provider")       \
	X(RSHARE_E_STALE, "handle already freed, unimported or closed")          \
	X(RSHARE_E_BUSY, "object still in use")                                  \
	X(RSHARE_E_NOSPACE, "output buffer too small")                           \
	X(RSHARE_E_BLOB_CORRUPT, "blob is malformed or damaged")                 \
	X(RSHARE_E_BLOB_VERSION, "blob format version is newer than this library") \
	X(RSHARE_E_BLOB_KIND, "blob is of another object kind")                  \
	X(RSHARE_E_DEVICE_MISMATCH, "blob comes from another device or object table") \
	X(RSHARE_E_NOT_FOUND, "object not found")                                \
	X(RSHARE_E_PERM, "permission denied")                                    \
	X(RSHARE_E_IO, "system call failed")                                     \
	X(RSHARE_E_PROTOCOL, "malformed channel message")                        \
	X(RSHARE_E_AGAIN, "would block: nothing consumed, try again when readable") \
	X(RSHARE_E_FD_MISMATCH, "fd is not the memory the blob describes")

const char *rs_status_name(int status);
const char *rs_status_text(int status);

#endif
