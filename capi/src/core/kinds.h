/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kind table: every kind of shared object, one row each. Everything
 * that differs by kind outside the kind's own life cycle (pd.c, var.c, ...)
 * and its provider calls is derived from here: the slot kinds of the handle
 * table, the order in which a forked child releases what it inherited, the
 * blob codec and rshare_blob_field(), the JSON of rshare_blob_describe(),
 * rshare_kind_name() (which the bindings, the CLI and the broker's listing
 * use) and sim0's object types. Adding a kind: abi/README.md, "Adding a
 * kind".
 *
 * RS_KINDS(X) calls X(NAME, word, json, parent, release, priv_max), in
 * RSHARE_KIND_* order (kinds.c asserts each row's number):
 *   NAME      RSHARE_KIND_<NAME>; its slot kind is RS_OBJ_<NAME>, its blob
 *             fields RS_FIELDS_<NAME> below
 *   word      what messages call it ("PD")
 *   json      its name in JSON, the bindings and rshare_kind_name() ("pd")
 *   parent    what it lives in: DEVICE, or another kind (an MR lives in
 *             its PD)
 *   release   the pass in which a forked child releases the inherited
 *             objects of this kind: an object before what it lives in
 *   priv_max  the largest provider-private part its blob may carry
 */
#ifndef RSHARE_CORE_KINDS_H
#define RSHARE_CORE_KINDS_H

#include <stdint.h>

#include "provider.h"

#define RS_KINDS(X)                                            \
	X(PD, "PD", "pd", DEVICE, 2, RS_PRIV_MAX)              \
	X(VAR, "VAR", "var", DEVICE, 2, RS_PRIV_MAX)           \
	X(MR, "MR", "mr", PD, 1, 0)                            \
	X(DM, "DM", "dm", DEVICE, 2, 0)                        \
	X(BUF, "buffer", "buf", PD, 0, 0)

/* Release passes a forked child makes (release is 0 .. this - 1): a
 * buffer releases the MR it holds itself, so it goes before the MRs.
 * A buffer is a memfd and an MR: in sim0's table it is that MR (SIM_BUF
 * names no object there, and valid_obj refuses one). */
#define RS_RELEASE_PASSES 3

/*
 * What each kind's blob carries after the common fields: RS_FIELDS_<NAME>(F)
 * calls F(FIELD, member, offset, width) for each: FIELD an
 * RSHARE_FIELD_<FIELD>, member the struct rs_blob member that holds it,
 * offset in bytes from the end of the common fields, width 4 or 8 (a
 * little-endian integer), in the order rshare_blob_describe() lists them.
 * The byte layout is abi/BLOB-FORMAT.md's and never changes.
 */
#define RS_FIELDS_PD(F)
#define RS_FIELDS_VAR(F) F(PAGE_ID, page_id, 0, 4) F(LENGTH, length, 4, 4) F(MMAP_OFF, mmap_off, 8, 8)
#define RS_FIELDS_MR(F)                                                          \
	F(PD_HANDLE, pd_handle, 0, 4) F(PD_SERIAL, pd_serial, 8, 8) F(ADDR, addr, 16, 8) \
	F(LENGTH, length, 24, 8) F(LKEY, lkey, 32, 4) F(RKEY, rkey, 36, 4)        \
	F(ACCESS, access, 4, 4)
#define RS_FIELDS_DM(F) F(LENGTH, length, 0, 8)
/* A shared buffer: its MR's fields, then its memfd's identity. */
#define RS_FIELDS_BUF(F) RS_FIELDS_MR(F) F(MEM_DEV, mem_dev, 40, 8) F(MEM_INO, mem_ino, 48, 8)

/* Slot kinds (4 bits of a handle token): the device, then one per kind in
 * table order. The broker's kinds (internal.h) sit at the top. */
enum rs_obj_kind {
	RS_OBJ_DEVICE = 1,
#define RS_OBJ_ENUM(N, ...) RS_OBJ_##N,
	RS_KINDS(RS_OBJ_ENUM)
#undef RS_OBJ_ENUM
	RS_OBJ_END /* one past the last object kind */
};

/* How many kinds the table has: RSHARE_KIND_1 .. RS_NKINDS. */
#define RS_KIND_COUNT(...) +1
enum { RS_NKINDS = 0 RS_KINDS(RS_KIND_COUNT) };
#undef RS_KIND_COUNT

struct rs_blob;

/* One field of a kind's blob. */
struct rs_field_at {
	uint8_t field;  /* enum rshare_field */
	uint8_t offset; /* from the end of the common fields */
	uint8_t width;  /* 4 or 8 */
};

/* A row of the table, as the code reads it. */
struct rs_kind {
	const char *word, *json;
	int slot_kind;   /* RS_OBJ_* */
	int parent_kind; /* RS_OBJ_DEVICE or another kind's RS_OBJ_* */
	int release;     /* fork release pass */
	uint8_t fields_len; /* bytes of kind fields in its blob */
	uint8_t priv_max;
	uint8_t nfields;
	const struct rs_field_at *fields;
	/* The kind's fields between a struct rs_blob and the bytes after the
	 * common fields (straight-line code made from RS_FIELDS_<NAME>). */
	void (*encode)(const struct rs_blob *b, uint8_t *f);
	void (*decode)(const uint8_t *f, struct rs_blob *b);
};

/* Indexed by enum rshare_kind, 1 .. RS_NKINDS. */
extern const struct rs_kind rs_kinds[RS_NKINDS + 1];

/* The row of blob kind k (enum rshare_kind), NULL for a kind this library
 * does not know. */
static inline const struct rs_kind *rs_kind(int k)
{
	return k > 0 && k <= RS_NKINDS ? &rs_kinds[k] : NULL;
}

/* The blob kind of slot kind s, 0 if s is not an object kind. */
static inline int rs_kind_of_slot(int s)
{
	return s > RS_OBJ_DEVICE && s < RS_OBJ_END ? s - RS_OBJ_DEVICE : 0;
}

/* What a struct rs_obj_ops says about its kind, from the table:
 * `static const struct rs_obj_ops pd_ops = { RS_OPS_KIND(PD), ... }`. */
#define RS_PARENT_ENUM(N, w, j, P, ...) RS_PARENT_OF_##N = RS_OBJ_##P,
enum { RS_KINDS(RS_PARENT_ENUM) };
#undef RS_PARENT_ENUM
#define RS_OPS_KIND(N) \
	.slot_kind = RS_OBJ_##N, .blob_kind = RSHARE_KIND_##N, .parent_kind = RS_PARENT_OF_##N

#endif
