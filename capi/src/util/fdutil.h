/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Small fd helpers shared by the core and the providers. */
#ifndef RSHARE_UTIL_FDUTIL_H
#define RSHARE_UTIL_FDUTIL_H

/* dup(fd) with O_CLOEXEC, retrying EINTR; -1 + errno on failure. */
int rs_dup_cloexec(int fd);
/* close() that keeps errno intact, for cleanup paths. */
void rs_close_quietly(int fd);

#endif
