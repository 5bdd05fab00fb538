/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdma-core reports failures as errno values; this maps them to statuses
 * and says what each one means coming from uverbs (docs/hardware.md has the
 * table per call). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "hw/hw_internal.h"
#include "util/error.h"

int rs_hw_status(int err)
{
	switch (err) {
	case ENOMEM:
	case ENOSPC: /* no free VAR entry (alloc_var_entry) and the like */
		return RSHARE_E_NOMEM;
	case EOPNOTSUPP: /* == ENOTSUP on Linux: flags rdma-core does not know */
	case EPROTONOSUPPORT: /* kernel: unknown object, method or attribute */
	case ENOSYS:
		return RSHARE_E_UNSUPPORTED;
	case EPERM:
	case EACCES:
		return RSHARE_E_PERM;
	case EBUSY:
		return RSHARE_E_BUSY;
	default:
		return RSHARE_E_IO; /* EIO: disassociated device, and the rest */
	}
}

int rs_hw_lookup_status(int err)
{
	/* The kernel answers ENOENT for a handle with no object and EINVAL for
	 * one naming an object of another type; both mean "not that object". */
	if (err == EINVAL || err == ENOENT)
		return RSHARE_E_NOT_FOUND;
	return rs_hw_status(err);
}

/* What err means, in words, or "" when its strerror text says it all. */
static const char *cause(int err, bool lookup, const char *lacks, char *buf, size_t cap)
{
	switch (err) {
	case EPROTONOSUPPORT:
		snprintf(buf, cap, ": the device or its kernel driver lacks %s "
			 "(the kernel does not know the object, method or attribute)",
			 lacks ? lacks : "this operation");
		return buf;
	case EOPNOTSUPP:
		snprintf(buf, cap, ": the loaded rdma-core or its provider lacks %s",
			 lacks ? lacks : "this operation");
		return buf;
	case EIO:
		return ": the device was removed or reset (disassociated); close it "
		       "and open it again once it is back";
	case ENOSPC:
		return ": the device has no free entry of this kind left";
	case EBUSY:
		return ": the object is in use (a PD that still has MRs, or another "
		       "command holds it)";
	case ENOENT:
	case EINVAL:
		return lookup ? ": no such object in this context (freed?)" : "";
	default:
		return "";
	}
}

int rs_hw_fail(int err, bool lookup, const char *lacks, const char *fmt, ...)
{
	char what[256], why[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return rs_fail(lookup ? rs_hw_lookup_status(err) : rs_hw_status(err), err, "%s%s",
		       what, cause(err, lookup, lacks, why, sizeof(why)));
}
