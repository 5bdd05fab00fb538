/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "util/status.h"

#define RS_NAME(code, text) [-(code)] = #code,
#define RS_TEXT(code, text) [-(code)] = text,
#define RS_COUNT(code, text) +1

static const char *const rs_names[] = { RS_STATUS_LIST(RS_NAME) };
static const char *const rs_texts[] = { RS_STATUS_LIST(RS_TEXT) };

#define NSTATUS (sizeof(rs_names) / sizeof(rs_names[0]))

/* The list ends with the lowest status (0 .. RSHARE_E_FD_MISMATCH). */
_Static_assert(NSTATUS == -RSHARE_E_FD_MISMATCH + 1, "status list does not end at the lowest");
_Static_assert(0 RS_STATUS_LIST(RS_COUNT) <= -RSHARE_E_FD_MISMATCH + 1,
	       "status list has duplicates");

/* A status of the list (a reserved number between two is not one). */
static int rs_known(int status)
{
	/* Bounds first: INT_MIN has no negation. */
	return status <= 0 && status > -(int)NSTATUS && rs_names[-status];
}

const char *rs_status_name(int status)
{
	return rs_known(status) ? rs_names[-status] : "RSHARE_E_UNKNOWN";
}

const char *rs_status_text(int status)
{
	return rs_known(status) ? rs_texts[-status] : "unknown status";
}
