/* rdma-core reports failures as errno values; this maps them to statuses. */
#include <errno.h>

#include "hw/hw_internal.h"

int rs_hw_status(int err)
{
	switch (err) {
	case ENOMEM:
		return RSHARE_E_NOMEM;
	case EOPNOTSUPP: /* == ENOTSUP on Linux */
	case ENOSYS:
		return RSHARE_E_UNSUPPORTED;
	case EPERM:
	case EACCES:
		return RSHARE_E_PERM;
	case EBUSY:
		return RSHARE_E_BUSY;
	default:
		return RSHARE_E_IO;
	}
}

int rs_hw_lookup_status(int err)
{
	/* The kernel answers ENOENT for a handle with no object and EINVAL for
	 * one naming an object of another type; both mean "not that PD/VAR". */
	if (err == EINVAL || err == ENOENT)
		return RSHARE_E_NOT_FOUND;
	return rs_hw_status(err);
}
