/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef RSHARE_UTIL_CRC32C_H
#define RSHARE_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes; rs_crc32c("123456789", 9) == 0xe3069283. */
uint32_t rs_crc32c(const void *data, size_t len);

#endif
