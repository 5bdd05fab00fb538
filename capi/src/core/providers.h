/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The providers in listing order (hardware first, then the simulated one). */
#ifndef RSHARE_CORE_PROVIDERS_H
#define RSHARE_CORE_PROVIDERS_H

#include "provider.h"

#define RS_NPROVIDERS 2
extern const struct rs_provider *const rs_providers[RS_NPROVIDERS];

#endif
