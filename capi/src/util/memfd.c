/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "util/memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "util/error.h"
#include "util/fdutil.h"

/* Seals every buffer memfd carries: its size can never change. */
#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#ifdef F_SEAL_FUTURE_WRITE
#define WRITE_SEALS (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)
#else
#define WRITE_SEALS F_SEAL_WRITE
#endif

static int memfd_status(int err)
{
	return err == ENOMEM || err == ENOSPC || err == EFBIG ? RSHARE_E_NOMEM : RSHARE_E_IO;
}

int rs_memfd_new(uint64_t length, int *out)
{
	int fd = memfd_create("rshare-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return rs_fail(memfd_status(errno), errno, "memfd_create for the buffer failed");
	if (length > INT64_MAX || ftruncate(fd, (off_t)length) != 0 ||
	    fcntl(fd, F_ADD_SEALS, SEALS) != 0) {
		err = length > INT64_MAX ? EFBIG : errno;
		rs_close_quietly(fd);
		return rs_fail(memfd_status(err), err, "cannot size and seal a memfd of %" PRIu64
			       " bytes for the buffer", length);
	}
	*out = fd;
	return RSHARE_OK;
}

int rs_memfd_sealed(int fd, struct stat *st)
{
	struct stat own;
	int seals;

	if (!st)
		st = &own;

	if (fd < 0)
		return rs_fail(RSHARE_E_INVAL, 0, "fd %d is negative", fd);
	/* The seals first: F_GET_SEALS answers from the file's own inode
	 * (EINVAL for anything but a memfd) without asking its filesystem,
	 * where fstat of a FUSE file would wait for a daemon that may never
	 * answer. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 && errno == EBADF)
		return rs_fail(RSHARE_E_INVAL, errno, "fd %d is not open", fd);
	if (seals < 0)
		return rs_fail(RSHARE_E_FD_MISMATCH, 0,
			       "fd %d is not a memfd (no seals: a regular file, pipe or "
			       "socket?), so it is not a buffer's memory", fd);
	if ((seals & SEALS) != SEALS || (seals & WRITE_SEALS))
		return rs_fail(RSHARE_E_FD_MISMATCH, 0,
			       "fd %d has seals 0x%x, a buffer's memfd has exactly 0x%x "
			       "(sealed size, writable): not a buffer's memory",
			       fd, (unsigned)seals, (unsigned)SEALS);
	if (fstat(fd, st) != 0)
		return rs_fail(RSHARE_E_INVAL, errno, "fd %d is not open", fd);
	if (!S_ISREG(st->st_mode))
		return rs_fail(RSHARE_E_FD_MISMATCH, 0, "fd %d is no regular file, so it is "
			       "not a buffer's memory", fd);
	return RSHARE_OK;
}

int rs_memfd_check(int fd, uint64_t length, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int status = rs_memfd_sealed(fd, &st);

	if (status)
		return status;
	if ((uint64_t)st.st_size != length)
		return rs_fail(RSHARE_E_FD_MISMATCH, 0,
			       "fd %d holds %" PRIu64 " bytes, the buffer %" PRIu64 ": not "
			       "the buffer's memory", fd, (uint64_t)st.st_size, length);
	if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)
		return rs_fail(RSHARE_E_FD_MISMATCH, 0,
			       "fd %d is memfd inode %" PRIu64 " (device %" PRIu64 "), the "
			       "buffer's memory is inode %" PRIu64 " (device %" PRIu64 "): "
			       "another memfd", fd, (uint64_t)st.st_ino, (uint64_t)st.st_dev,
			       ino, dev);
	return RSHARE_OK;
}

int rs_memfd_map(int fd, uint64_t length, void **addr)
{
	void *p;

	if (length > SIZE_MAX)
		return rs_fail(RSHARE_E_NOMEM, 0, "a buffer of %" PRIu64 " bytes does not fit "
			       "this process's address space", length);
	p = mmap(NULL, (size_t)length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return rs_fail(memfd_status(errno), errno, "mmap of the buffer's %" PRIu64
			       " bytes failed", length);
	*addr = p;
	return RSHARE_OK;
}
