/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare_blob_field(): one scalar of a validated blob, so that bindings
 * need not parse rshare_blob_describe()'s JSON to read a field. */
#include "blob.h"
#include "util/error.h"

/* Which kinds carry each field, as bits (1 << kind). */
#define K(kind) (1u << (kind))
#define EVERY                                                                      \
	(K(RSHARE_KIND_PD) | K(RSHARE_KIND_VAR) | K(RSHARE_KIND_MR) | K(RSHARE_KIND_DM) | \
	 K(RSHARE_KIND_BUF))
#define MR_FIELDS (K(RSHARE_KIND_MR) | K(RSHARE_KIND_BUF)) /* a buffer carries its MR's */

static const struct {
	const char *name;
	unsigned kinds;
} fields[] = {
	[RSHARE_FIELD_KIND] = { "kind", EVERY },
	[RSHARE_FIELD_PROVIDER] = { "provider", EVERY },
	[RSHARE_FIELD_GUID] = { "guid", EVERY },
	[RSHARE_FIELD_TABLE] = { "table", EVERY },
	[RSHARE_FIELD_HANDLE] = { "handle", EVERY },
	[RSHARE_FIELD_SERIAL] = { "serial", EVERY },
	[RSHARE_FIELD_PAGE_ID] = { "page_id", K(RSHARE_KIND_VAR) },
	[RSHARE_FIELD_LENGTH] = { "length", K(RSHARE_KIND_VAR) | MR_FIELDS |
						    K(RSHARE_KIND_DM) },
	[RSHARE_FIELD_MMAP_OFF] = { "mmap_off", K(RSHARE_KIND_VAR) },
	[RSHARE_FIELD_PD_HANDLE] = { "pd_handle", MR_FIELDS },
	[RSHARE_FIELD_PD_SERIAL] = { "pd_serial", MR_FIELDS },
	[RSHARE_FIELD_ADDR] = { "addr", MR_FIELDS },
	[RSHARE_FIELD_LKEY] = { "lkey", MR_FIELDS },
	[RSHARE_FIELD_RKEY] = { "rkey", MR_FIELDS },
	[RSHARE_FIELD_ACCESS] = { "access", MR_FIELDS },
	[RSHARE_FIELD_MEM_DEV] = { "mem_dev", K(RSHARE_KIND_BUF) },
	[RSHARE_FIELD_MEM_INO] = { "mem_ino", K(RSHARE_KIND_BUF) },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static uint64_t field_value(const struct rs_blob *b, int field)
{
	switch (field) {
	case RSHARE_FIELD_KIND: return (uint64_t)b->kind;
	case RSHARE_FIELD_PROVIDER: return (uint64_t)b->provider;
	case RSHARE_FIELD_GUID: return b->guid;
	case RSHARE_FIELD_TABLE: return b->table_id;
	case RSHARE_FIELD_HANDLE: return b->handle;
	case RSHARE_FIELD_SERIAL: return b->serial;
	case RSHARE_FIELD_PAGE_ID: return b->page_id;
	case RSHARE_FIELD_LENGTH: return b->length;
	case RSHARE_FIELD_MMAP_OFF: return b->mmap_off;
	case RSHARE_FIELD_PD_HANDLE: return b->pd_handle;
	case RSHARE_FIELD_PD_SERIAL: return b->pd_serial;
	case RSHARE_FIELD_ADDR: return b->addr;
	case RSHARE_FIELD_LKEY: return b->lkey;
	case RSHARE_FIELD_RKEY: return b->rkey;
	case RSHARE_FIELD_ACCESS: return b->access;
	case RSHARE_FIELD_MEM_DEV: return b->mem_dev;
	default: return b->mem_ino; /* RSHARE_FIELD_MEM_INO */
	}
}

int rshare_blob_field(const void *blob, size_t len, int field, uint64_t *value)
{
	struct rs_blob b;
	int status;

	if (!value)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "value is NULL"));
	if (field <= 0 || (size_t)field >= NFIELDS || !fields[field].name)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "field %d is not an enum rshare_field",
				  field));
	status = rs_blob_decode(blob, len, &b);
	if (status)
		RS_RETURN(status);
	if (!(fields[field].kinds & K(b.kind)))
		RS_RETURN(rs_fail(RSHARE_E_NOT_FOUND, 0, "a%s %s blob has no field %s",
				  b.kind == RSHARE_KIND_MR ? "n" : "", rs_kind_word(b.kind),
				  fields[field].name));
	*value = field_value(&b, field);
	return RSHARE_OK;
}
