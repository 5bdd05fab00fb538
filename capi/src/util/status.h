/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The status table: every status's name and description, from the header. */
#ifndef RSHARE_UTIL_STATUS_H
#define RSHARE_UTIL_STATUS_H

#include "rshare/rshare.h"

/* RS_STATUS_LIST(X): X(enum constant, one-line description) for every
 * status, 0 down (numbers reserved for statuses still being added may leave gaps), generated from the header's enum rshare_status and its
 * doc comments (capi/status_list.cmake): the header is the one list. */
#include "rs_status_list.h"

const char *rs_status_name(int status);
const char *rs_status_text(int status);

#endif
