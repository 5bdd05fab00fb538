/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rshare_blob_field(): one scalar of a validated blob, so that bindings
 * need not parse rshare_blob_describe()'s JSON to read a field. Which kind
 * has which field is the kind table's (kinds.h). */
#include "blob.h"
#include "kinds.h"
#include "util/error.h"

const struct rs_field_name rs_field_names[RS_NFIELDS] = {
	[RSHARE_FIELD_KIND] = { "kind", false },
	[RSHARE_FIELD_PROVIDER] = { "provider", false },
	[RSHARE_FIELD_GUID] = { "guid", true },
	[RSHARE_FIELD_TABLE] = { "table", true },
	[RSHARE_FIELD_HANDLE] = { "handle", false },
	[RSHARE_FIELD_SERIAL] = { "serial", false },
	[RSHARE_FIELD_PAGE_ID] = { "page_id", false },
	[RSHARE_FIELD_LENGTH] = { "length", false },
	[RSHARE_FIELD_MMAP_OFF] = { "mmap_off", false },
	[RSHARE_FIELD_PD_HANDLE] = { "pd_handle", false },
	[RSHARE_FIELD_PD_SERIAL] = { "pd_serial", false },
	[RSHARE_FIELD_ADDR] = { "addr", true },
	[RSHARE_FIELD_LKEY] = { "lkey", false },
	[RSHARE_FIELD_RKEY] = { "rkey", false },
	[RSHARE_FIELD_ACCESS] = { "access", false },
	[RSHARE_FIELD_MEM_DEV] = { "mem_dev", false },
	[RSHARE_FIELD_MEM_INO] = { "mem_ino", false },
	[RSHARE_FIELD_LEDGER] = { "ledger", false },
};

/* Does blob b carry field? The common fields every blob has, the ledger
 * serial a blob with flag LEDGER; the others are in the kind's layout. */
static bool has_field(const struct rs_blob *b, int field)
{
	const struct rs_kind *k = rs_kind(b->kind);

	if (field == RSHARE_FIELD_LEDGER)
		return b->has_ledger;
	if (field <= RSHARE_FIELD_SERIAL)
		return true;
	for (unsigned i = 0; i < k->nfields; i++)
		if (k->fields[i].field == field)
			return true;
	return false;
}

int rshare_blob_field(const void *blob, size_t len, int field, uint64_t *value)
{
	struct rs_blob b;
	int status;

	if (!value)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "value is NULL"));
	if (field <= 0 || field >= RS_NFIELDS || !rs_field_names[field].name)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "field %d is not an enum rshare_field",
				  field));
	status = rs_blob_decode(blob, len, &b);
	if (status)
		RS_RETURN(status);
	if (!has_field(&b, field))
		RS_RETURN(rs_fail(RSHARE_E_NOT_FOUND, 0, "%s %s blob has no field %s",
				  rs_kind_article(b.kind), rs_kind_word(b.kind),
				  rs_field_names[field].name));
	*value = rs_blob_get(&b, field);
	return RSHARE_OK;
}
