/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Blob inspection and the text form ("rshare:" + unpadded base64url). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "blob.h"
#include "kinds.h"
#include "providers.h"
#include "util/copyout.h"
#include "util/error.h"
#include "util/le.h"

#define TEXT_PREFIX "rshare:"
#define TEXT_PREFIX_LEN (sizeof(TEXT_PREFIX) - 1)

static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

_Static_assert(TEXT_PREFIX_LEN + (RSHARE_BLOB_MAX * 4 + 2) / 3 + 1 <= RSHARE_TEXT_MAX,
	       "RSHARE_TEXT_MAX must hold the largest blob's text form");

int rshare_blob_kind(const void *blob, size_t len, int *kind)
{
	struct rs_blob b;
	int status;

	if (!kind)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "kind is NULL"));
	status = rs_blob_decode(blob, len, &b);
	if (status)
		RS_RETURN(status);
	*kind = b.kind;
	return RSHARE_OK;
}

int rshare_blob_size(const void *buf, size_t avail, size_t *len)
{
	const uint8_t *p = buf;
	size_t n;

	if (!buf || !len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "%s is NULL", buf ? "len" : "buf"));
	if (avail < RS_BLOB_MIN)
		RS_RETURN(rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
				  "blob truncated: %zu bytes left, a blob has at least %d",
				  avail, RS_BLOB_MIN));
	if (memcmp(p + RS_BLOB_OFF_MAGIC, RS_BLOB_MAGIC, 4) != 0)
		RS_RETURN(rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
				  "not an rshare blob: bad magic (%zu bytes left)", avail));
	n = rs_get16(p + RS_BLOB_OFF_LENGTH);
	if (n < RS_BLOB_MIN || n > avail)
		RS_RETURN(rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
				  "blob length field says %zu bytes, %s", n,
				  n < RS_BLOB_MIN ? "too short for a blob"
						  : "more than are left"));
	*len = n;
	return RSHARE_OK;
}

int rshare_blob_describe(const void *blob, size_t len, char *buf, size_t cap,
			 size_t *out_len)
{
	char json[512]; /* the header promises at most 512 bytes */
	const struct rs_kind *k;
	struct rs_blob b;
	int n, status = rs_blob_decode(blob, len, &b);

	if (status)
		RS_RETURN(status);
	k = rs_kind(b.kind);
	n = snprintf(json, sizeof(json),
		     "{\"format\":%d,\"kind\":\"%s\",\"provider\":\"%s\","
		     "\"guid\":\"0x%016" PRIx64 "\",\"table\":\"0x%016" PRIx64 "\","
		     "\"handle\":%" PRIu32 ",\"serial\":%" PRIu64,
		     RS_BLOB_FORMAT, k->json, rs_provider_name(b.provider), b.guid,
		     b.table_id, b.handle, b.serial);
	for (unsigned i = 0; i < k->nfields; i++) {
		const struct rs_field_name *f = &rs_field_names[k->fields[i].field];
		uint64_t v = rs_blob_get(&b, k->fields[i].field);

		n += snprintf(json + n, sizeof(json) - (size_t)n,
			      f->hex ? ",\"%s\":\"0x%016" PRIx64 "\"" : ",\"%s\":%" PRIu64,
			      f->name, v);
	}
	if (b.has_ledger)
		n += snprintf(json + n, sizeof(json) - (size_t)n, ",\"%s\":%" PRIu32,
			      rs_field_names[RSHARE_FIELD_LEDGER].name, b.ledger);
	n += snprintf(json + n, sizeof(json) - (size_t)n,
		      ",\"private_len\":%u,\"size\":%zu}", b.priv_len, len);
	RS_RETURN(rs_copy_str(json, (size_t)n, buf, cap, out_len));
}

int rshare_blob_to_text(const void *blob, size_t len, char *buf, size_t cap,
			size_t *out_len)
{
	char text[RSHARE_TEXT_MAX];
	const uint8_t *p = blob;
	struct rs_blob b;
	size_t n = TEXT_PREFIX_LEN, i;
	int status = rs_blob_decode(blob, len, &b);

	if (status)
		RS_RETURN(status);
	memcpy(text, TEXT_PREFIX, TEXT_PREFIX_LEN);
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		text[n++] = b64url[v >> 18];
		text[n++] = b64url[(v >> 12) & 63];
		text[n++] = b64url[(v >> 6) & 63];
		text[n++] = b64url[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
		text[n++] = b64url[v >> 18];
		text[n++] = b64url[(v >> 12) & 63];
		if (i + 1 < len)
			text[n++] = b64url[(v >> 6) & 63];
	}
	RS_RETURN(rs_copy_str(text, n, buf, cap, out_len));
}

static int b64_value(unsigned char c)
{
	const char *at = c ? strchr(b64url, c) : NULL;
	return at ? (int)(at - b64url) : -1;
}

int rshare_blob_from_text(const char *text, void *buf, size_t cap, size_t *out_len)
{
	uint8_t blob[RSHARE_BLOB_MAX];
	struct rs_blob b;
	size_t n, len = 0, bits = 0;
	uint32_t acc = 0;
	int status;

	if (!text)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "text is NULL"));
	if (strncmp(text, TEXT_PREFIX, TEXT_PREFIX_LEN) != 0)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0,
				  "text form must start with \"" TEXT_PREFIX "\""));
	text += TEXT_PREFIX_LEN;
	n = strlen(text);
	/* Tolerate the trailing newline or spaces of a pasted or echoed value. */
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' ||
		     text[n - 1] == ' ' || text[n - 1] == '\t'))
		n--;
	if (n % 4 == 1)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0,
				  "text form has an impossible base64url length %zu", n));
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)text[i]);
		if (v < 0)
			RS_RETURN(rs_fail(RSHARE_E_INVAL, 0,
					  "text form has a non-base64url character at offset %zu",
					  TEXT_PREFIX_LEN + i));
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (len == sizeof(blob))
				RS_RETURN(rs_fail(RSHARE_E_BLOB_CORRUPT, 0,
						  "text form decodes to more than %d bytes",
						  RSHARE_BLOB_MAX));
			blob[len++] = (uint8_t)(acc >> bits);
		}
	}
	if (acc & ((1u << bits) - 1))
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0,
				  "text form has non-zero padding bits (not canonical)"));
	status = rs_blob_decode(blob, len, &b);
	if (status)
		RS_RETURN(status);
	RS_RETURN(rs_copy_out(blob, len, buf, cap, out_len));
}
