/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Library-level entry points: version, status table, names of kinds and
 * providers, diagnostics. */
#include "rshare/rshare.h"
#include "kinds.h"
#include "providers.h"
#include "util/error.h"
#include "util/status.h"

#define RS_STR_(x) #x
#define RS_STR(x) RS_STR_(x)

const char *rshare_version(void)
{
	return RS_STR(RSHARE_VERSION_MAJOR) "." RS_STR(RSHARE_VERSION_MINOR) "."
		RS_STR(RSHARE_VERSION_PATCH);
}

int rshare_version_number(void)
{
	return RSHARE_VERSION_MAJOR * 10000 + RSHARE_VERSION_MINOR * 100 + RSHARE_VERSION_PATCH;
}

_Static_assert(RSHARE_VERSION_NUMBER == RSHARE_VERSION_MAJOR * 10000 +
					       RSHARE_VERSION_MINOR * 100 + RSHARE_VERSION_PATCH,
	       "RSHARE_VERSION_NUMBER must match the version macros");
_Static_assert(RSHARE_HEADER_VERSION == RSHARE_VERSION_NUMBER,
	       "the enum member must match the macro");

const char *rshare_status_name(int status)
{
	return rs_status_name(status);
}

const char *rshare_strerror(int status)
{
	return rs_status_text(status);
}

const char *rshare_kind_name(int kind)
{
	return rs_kind(kind) ? rs_kind(kind)->json : NULL;
}

const char *rshare_provider_name(int provider)
{
	return rs_provider_name(provider);
}

const char *rshare_last_error(void)
{
	return rs_last_error();
}

int rshare_last_errno(void)
{
	return rs_last_errno();
}
