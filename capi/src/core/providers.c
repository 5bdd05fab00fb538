/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The provider table, in listing order (hardware first), and what the rest
 * of the core asks of it by provider id. */
#include "providers.h"

const struct rs_provider *const rs_providers[RS_NPROVIDERS] = {
	&rs_hw_provider,
	&rs_sim_provider,
};
