/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Little-endian field access for byte layouts (blobs, channel headers):
 * correct on any host byte order and alignment, and a single load or
 * store on little-endian hosts (memcpy of a fixed size compiles to one). */
#ifndef RSHARE_UTIL_LE_H
#define RSHARE_UTIL_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void rs_put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rs_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rs_put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t rs_get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t rs_get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t rs_get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

#endif
