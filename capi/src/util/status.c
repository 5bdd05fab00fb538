/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "util/status.h"

#define RS_NAME(code, text) [-(code)] = #code,
#define RS_TEXT(code, text) [-(code)] = text,
#define RS_COUNT(code, text) +1

static const char *const rs_names[] = { RS_STATUS_LIST(RS_NAME) };
static const char *const rs_texts[] = { RS_STATUS_LIST(RS_TEXT) };

/* The list covers 0, -1, ... with no gap or duplicate: as many entries as
 * the arrays (indexed by -status) have places. */
#define RS_NSTATUS (0 RS_STATUS_LIST(RS_COUNT))
_Static_assert(sizeof(rs_names) / sizeof(rs_names[0]) == RS_NSTATUS,
	       "status list has duplicates or gaps");

static int rs_known(int status)
{
	return status <= 0 && status > -RS_NSTATUS;
}

const char *rs_status_name(int status)
{
	return rs_known(status) ? rs_names[-status] : "RSHARE_E_UNKNOWN";
}

const char *rs_status_text(int status)
{
	return rs_known(status) ? rs_texts[-status] : "unknown status";
}
