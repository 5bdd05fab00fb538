/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The memory of a shared buffer: a memfd sealed against any change of
 * size (so no mapping of it can lose its end: no SIGBUS), made, checked
 * and mapped here for the core (buf.c) and the bench's floor alike. Each
 * returns RSHARE_OK or a status with the cause recorded (rs_fail). */
#ifndef RSHARE_UTIL_MEMFD_H
#define RSHARE_UTIL_MEMFD_H

#include <stdint.h>
#include <sys/stat.h>

/* A new sealed memfd of length zeroed bytes, close-on-exec, in *fd. */
int rs_memfd_new(uint64_t length, int *fd);
/* Is fd such a memfd (of any length, writable)? Then st (unless NULL) is
 * its fstat.
 * RSHARE_E_INVAL (not an open fd) or RSHARE_E_FD_MISMATCH naming why. The
 * seals are asked first, so an fd of another filesystem (FUSE) is refused
 * before anything could wait on it. */
int rs_memfd_sealed(int fd, struct stat *st);
/* Is fd such a memfd, writable, of length bytes, the file (dev, ino)?
 * RSHARE_E_INVAL (not an open fd) or RSHARE_E_FD_MISMATCH naming why. */
int rs_memfd_check(int fd, uint64_t length, uint64_t dev, uint64_t ino);
/* Map length bytes of fd shared and read-write into this process. */
int rs_memfd_map(int fd, uint64_t length, void **addr);

#endif
