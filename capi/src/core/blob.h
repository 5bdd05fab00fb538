/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Export blobs: encoding and full validation. Byte layout, field by field:
 * abi/BLOB-FORMAT.md. The decoder treats every input as hostile: it reads
 * only inside len, and every malformed input maps to one status.
 */
#ifndef RSHARE_CORE_BLOB_H
#define RSHARE_CORE_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"

#define RS_BLOB_MAGIC "RSHB"
#define RS_BLOB_FORMAT 1
/* Flags (byte 7). LEDGER: an 8-byte ledger serial follows the private
 * part (abi/BLOB-FORMAT.md, "Ledger serial"). */
#define RS_BLOB_FLAG_LEDGER 1u
#define RS_BLOB_LEDGER_SIZE 8

/* Offsets of the fixed fields (abi/BLOB-FORMAT.md). */
enum {
	RS_BLOB_OFF_MAGIC = 0,
	RS_BLOB_OFF_FORMAT = 4,
	RS_BLOB_OFF_KIND = 5,
	RS_BLOB_OFF_PROVIDER = 6,
	RS_BLOB_OFF_FLAGS = 7,
	RS_BLOB_OFF_LENGTH = 8,
	RS_BLOB_OFF_PRIV_LEN = 10,
	RS_BLOB_OFF_HANDLE = 12,
	RS_BLOB_OFF_GUID = 16,
	RS_BLOB_OFF_TABLE = 24,
	RS_BLOB_OFF_SERIAL = 32,
	RS_BLOB_COMMON_END = 40, /* then the kind's fields (kinds.h) */
	RS_BLOB_CRC_SIZE = 4,
	RS_BLOB_MIN = RS_BLOB_COMMON_END + RS_BLOB_CRC_SIZE
};

struct rs_blob {
	int kind;          /* enum rshare_kind */
	int provider;      /* enum rshare_provider */
	uint64_t guid;
	uint64_t table_id;
	uint64_t serial;
	uint32_t handle;
	/* The kinds' fields (kinds.h says which kind has which). */
	uint32_t page_id;  /* VAR only */
	uint64_t length;   /* VAR (a u32 on the wire), MR, DM */
	uint64_t mmap_off; /* VAR only */
	uint32_t pd_handle, lkey, rkey, access; /* MR, buffer */
	uint64_t pd_serial, addr;               /* MR, buffer */
	uint64_t mem_dev, mem_ino;              /* buffer: its memfd's identity */
	uint16_t priv_len;
	uint8_t priv[RS_PRIV_MAX];
	bool has_ledger;   /* flag LEDGER: ledger is the handle's ledger serial */
	uint32_t ledger;
};

/* Encode b into out (RSHARE_BLOB_MAX bytes); returns the blob's length. */
size_t rs_blob_encode(const struct rs_blob *b, uint8_t *out);

/* Validate and decode; RSHARE_OK or a RSHARE_E_BLOB_* / RSHARE_E_INVAL
 * status with the cause recorded. */
int rs_blob_decode(const void *buf, size_t len, struct rs_blob *b);

/* Every enum rshare_field: its JSON key, and whether rshare_blob_describe()
 * writes it as a hex string. */
#define RS_NFIELDS (RSHARE_FIELD_LEDGER + 1)
struct rs_field_name {
	const char *name;
	bool hex;
};
extern const struct rs_field_name rs_field_names[RS_NFIELDS];

/* One field of b (enum rshare_field; common or of b's kind). */
uint64_t rs_blob_get(const struct rs_blob *b, int field);

/* "PD", "VAR", "MR", "DM" (for messages), from the kind table. */
const char *rs_kind_word(int kind);
/* "a" or "an", as fits rs_kind_word(kind). */
const char *rs_kind_article(int kind);

/* May a blob of this content be imported into ctx? RSHARE_OK,
 * RSHARE_E_BLOB_KIND or RSHARE_E_DEVICE_MISMATCH with the cause recorded. */
int rs_blob_check_target(const struct rs_blob *b, int kind, const struct rs_ctx *ctx);

/* Fill the identity fields every blob of an object on ctx carries. */
void rs_blob_init(struct rs_blob *b, int kind, const struct rs_ctx *ctx);

/* The blob of a VAR on ctx, and back: the one place VAR fields are mapped. */
void rs_blob_from_var(struct rs_blob *b, const struct rs_ctx *ctx,
		      const struct rs_var_info *var);
void rs_var_from_blob(struct rs_var_info *var, const struct rs_blob *b);
#endif
