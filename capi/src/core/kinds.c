/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The kind table (kinds.h) as data, and the compile-time checks that keep
 * it consistent: a row in RSHARE_KIND_* order, a blob layout for every
 * kind (RS_FIELDS_<NAME> must exist), every blob within RSHARE_BLOB_MAX,
 * and every kind released before what it lives in. */
#include "blob.h"
#include "kinds.h"
#include "util/le.h"

/* Each kind's fields, then a zero entry (so that a kind without any still
 * has an array). */
#define FIELD_AT(F, m, off, w) { RSHARE_FIELD_##F, off, w },
#define KIND_FIELDS(N, ...) static const struct rs_field_at fields_##N[] = { RS_FIELDS_##N(FIELD_AT) { 0, 0, 0 } };
RS_KINDS(KIND_FIELDS)
#undef KIND_FIELDS

/* The bytes a kind's fields take: their widths summed. */
#define FIELD_LEN(F, m, off, w) + (w)
#define FIELDS_LEN(N) (0 RS_FIELDS_##N(FIELD_LEN))

/* Each kind's codec: one load or store per field, as hand-written code
 * would be (the import path runs it on every call). */
#define PUT_4(p, v) rs_put32(p, (uint32_t)(v))
#define PUT_8(p, v) rs_put64(p, (uint64_t)(v))
#define ENCODE_FIELD(F, m, off, w) PUT_##w(f + (off), b->m);
#define DECODE_FIELD(F, m, off, w) b->m = rs_get##w##_(f + (off));
#define rs_get4_ rs_get32
#define rs_get8_ rs_get64
#define KIND_CODEC(N, ...)                                                        \
	static void encode_##N(const struct rs_blob *b, uint8_t *f)               \
	{                                                                         \
		(void)b, (void)f;                                                 \
		RS_FIELDS_##N(ENCODE_FIELD)                                       \
	}                                                                         \
	static void decode_##N(const uint8_t *f, struct rs_blob *b)               \
	{                                                                         \
		(void)b, (void)f;                                                 \
		RS_FIELDS_##N(DECODE_FIELD)                                       \
	}
RS_KINDS(KIND_CODEC)
#undef KIND_CODEC

#define KIND_ROW(N, w, j, P, rel, priv)                                            \
	[RSHARE_KIND_##N] = { w, j, RS_OBJ_##N, RS_OBJ_##P, rel, FIELDS_LEN(N), priv, \
			      sizeof(fields_##N) / sizeof(fields_##N[0]) - 1, fields_##N, \
			      encode_##N, decode_##N },
const struct rs_kind rs_kinds[RS_NKINDS + 1] = { RS_KINDS(KIND_ROW) };
#undef KIND_ROW

/* Row n is RSHARE_KIND n, and its slot kind follows the device's. */
#define CHECK_ORDER(N, ...)                                                      \
	_Static_assert(RSHARE_KIND_##N == RS_OBJ_##N - RS_OBJ_DEVICE,            \
		       "kinds.h: row " #N " is not in RSHARE_KIND_* order");
RS_KINDS(CHECK_ORDER)

/* The largest blob of each kind fits RSHARE_BLOB_MAX, and a field fits
 * its kind's fields. */
#define CHECK_FIELD(F, m, off, w)                                                \
	_Static_assert((w) == 4 || (w) == 8, "kinds.h: field width is 4 or 8");
#define CHECK_SIZE(N, w, j, P, rel, priv)                                        \
	RS_FIELDS_##N(CHECK_FIELD)                                               \
	_Static_assert(RS_BLOB_COMMON_END + FIELDS_LEN(N) + (priv) + RS_BLOB_CRC_SIZE \
			       <= RSHARE_BLOB_MAX,                               \
		       "kinds.h: the largest " #N " blob exceeds RSHARE_BLOB_MAX");
RS_KINDS(CHECK_SIZE)

/* An object goes before what it lives in (a device goes after all). */
#define RELEASE_ENUM(N, w, j, P, rel, ...) RELEASE_OF_##N = (rel),
enum { RELEASE_OF_DEVICE = RS_RELEASE_PASSES, RS_KINDS(RELEASE_ENUM) };
#define CHECK_RELEASE(N, w, j, P, rel, ...)                                      \
	_Static_assert(RELEASE_OF_##N < RELEASE_OF_##P,                          \
		       "kinds.h: " #N " must be released before its parent " #P);
RS_KINDS(CHECK_RELEASE)

_Static_assert(RS_OBJ_END <= 14, "slot kinds 14 and 15 are the broker's (internal.h)");
