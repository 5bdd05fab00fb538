/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The providers in listing order (hardware first, then the simulated one). */
#ifndef RSHARE_CORE_PROVIDERS_H
#define RSHARE_CORE_PROVIDERS_H

#include "provider.h"

#define RS_NPROVIDERS 2
extern const struct rs_provider *const rs_providers[RS_NPROVIDERS];

/* The short name of provider id ("hw", "sim"), from the provider table;
 * NULL for an id that names none (a decoded blob's never does). Inline:
 * the blob decoder asks on every import. */
static inline const char *rs_provider_name(int id)
{
	for (size_t i = 0; i < RS_NPROVIDERS; i++)
		if (rs_providers[i]->id == id)
			return rs_providers[i]->name;
	return NULL;
}

#endif
