/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "blob.h"
#include "kinds.h"
#include "providers.h"

#include <inttypes.h>
#include <string.h>

#include "util/crc32c.h"
#include "util/error.h"
#include "util/le.h"

const char *rs_kind_word(int kind)
{
	return rs_kind(kind) ? rs_kind(kind)->word : "object of unknown kind";
}

const char *rs_kind_article(int kind)
{
	/* The words are initialisms, read letter by letter: "an MR". */
	return strchr("AEFHILMNORSXo", rs_kind_word(kind)[0]) ? "an" : "a";
}

uint64_t rs_blob_get(const struct rs_blob *b, int field)
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
	case RSHARE_FIELD_MEM_INO: return b->mem_ino;
	case RSHARE_FIELD_LEDGER: return b->ledger;
	default: return 0;
	}
}

static size_t blob_size(const struct rs_kind *k, size_t priv_len, bool ledger)
{
	return RS_BLOB_COMMON_END + k->fields_len + priv_len +
	       (ledger ? RS_BLOB_LEDGER_SIZE : 0) + RS_BLOB_CRC_SIZE;
}

size_t rs_blob_encode(const struct rs_blob *b, uint8_t *out)
{
	const struct rs_kind *k = rs_kind(b->kind);
	/* A ledger serial that would not fit leaves the blob at the checks
	 * of a context without the ledger (only a VAR whose libmlx5 export
	 * record is over 60 bytes would). */
	bool ledger = b->has_ledger && blob_size(k, b->priv_len, true) <= RSHARE_BLOB_MAX;
	size_t n = blob_size(k, b->priv_len, ledger);
	uint8_t *f = out + RS_BLOB_COMMON_END;

	memcpy(out + RS_BLOB_OFF_MAGIC, RS_BLOB_MAGIC, 4);
	out[RS_BLOB_OFF_FORMAT] = RS_BLOB_FORMAT;
	out[RS_BLOB_OFF_KIND] = (uint8_t)b->kind;
	out[RS_BLOB_OFF_PROVIDER] = (uint8_t)b->provider;
	out[RS_BLOB_OFF_FLAGS] = ledger ? RS_BLOB_FLAG_LEDGER : 0;
	rs_put16(out + RS_BLOB_OFF_LENGTH, (uint16_t)n);
	rs_put16(out + RS_BLOB_OFF_PRIV_LEN, b->priv_len);
	rs_put32(out + RS_BLOB_OFF_HANDLE, b->handle);
	rs_put64(out + RS_BLOB_OFF_GUID, b->guid);
	rs_put64(out + RS_BLOB_OFF_TABLE, b->table_id);
	rs_put64(out + RS_BLOB_OFF_SERIAL, b->serial);
	k->encode(b, f);
	f += k->fields_len;
	memcpy(f, b->priv, b->priv_len);
	f += b->priv_len;
	if (ledger) {
		rs_put64(f, b->ledger);
		f += RS_BLOB_LEDGER_SIZE;
	}
	rs_put32(f, rs_crc32c(out, (size_t)(f - out)));
	return n;
}

/* A malformed blob: the message's arguments checked against its format. */
#define corrupt(...) rs_fail(RSHARE_E_BLOB_CORRUPT, 0, __VA_ARGS__)

int rs_blob_decode(const void *buf, size_t len, struct rs_blob *b)
{
	const uint8_t *p = buf;
	const struct rs_kind *l;
	size_t want;
	uint32_t crc;
	uint8_t flags;

	if (!buf)
		return rs_fail(RSHARE_E_INVAL, 0, "blob is NULL");
	if (len < RS_BLOB_MIN)
		return corrupt("blob truncated: %zu bytes, at least %d needed", len,
			       RS_BLOB_MIN);
	if (memcmp(p + RS_BLOB_OFF_MAGIC, RS_BLOB_MAGIC, 4) != 0)
		return corrupt("not an rshare blob: bad magic (%zu bytes, first 4 checked)",
			       len);
	if (p[RS_BLOB_OFF_FORMAT] > RS_BLOB_FORMAT)
		return rs_fail(RSHARE_E_BLOB_VERSION, 0,
			       "blob format %u is newer than this library's %u",
			       p[RS_BLOB_OFF_FORMAT], RS_BLOB_FORMAT);
	if (p[RS_BLOB_OFF_FORMAT] == 0)
		return corrupt("blob format 0 is invalid (library has %d)", RS_BLOB_FORMAT);
	if (rs_get16(p + RS_BLOB_OFF_LENGTH) != len)
		return corrupt("blob length field says %u bytes, %zu given",
			       (unsigned)rs_get16(p + RS_BLOB_OFF_LENGTH), len);
	/* The checksum before the kind: a damaged kind byte is corruption, and
	 * only an intact blob of a kind this library does not know (a newer
	 * library's) is BLOB_KIND. */
	crc = rs_get32(p + len - RS_BLOB_CRC_SIZE);
	if (crc != rs_crc32c(p, len - RS_BLOB_CRC_SIZE))
		return corrupt("blob checksum mismatch (%zu bytes, crc 0x%" PRIx32 ")", len, crc);
	b->kind = p[RS_BLOB_OFF_KIND];
	l = rs_kind(b->kind);
	if (!l)
		return rs_fail(RSHARE_E_BLOB_KIND, 0,
			       "blob kind %d is unknown to this library (made by a newer "
			       "library?)", b->kind);
	b->priv_len = rs_get16(p + RS_BLOB_OFF_PRIV_LEN);
	if (b->priv_len > l->priv_max)
		return corrupt("blob private part of %u bytes exceeds %u for its kind",
			       (unsigned)b->priv_len, (unsigned)l->priv_max);
	flags = p[RS_BLOB_OFF_FLAGS];
	b->has_ledger = (flags & RS_BLOB_FLAG_LEDGER) != 0;
	want = blob_size(l, b->priv_len, b->has_ledger);
	if (want != len)
		return corrupt("blob fields need %zu bytes, length is %zu", want, len);
	b->provider = p[RS_BLOB_OFF_PROVIDER];
	if (!rs_provider_name(b->provider))
		return corrupt("blob provider %d is unknown (%zu bytes)", b->provider, len);
	if (flags & ~RS_BLOB_FLAG_LEDGER)
		return corrupt("blob flags 0x%x are not defined (%zu bytes)", (unsigned)flags, len);
	b->handle = rs_get32(p + RS_BLOB_OFF_HANDLE);
	b->guid = rs_get64(p + RS_BLOB_OFF_GUID);
	b->table_id = rs_get64(p + RS_BLOB_OFF_TABLE);
	b->serial = rs_get64(p + RS_BLOB_OFF_SERIAL);
	b->page_id = b->pd_handle = b->lkey = b->rkey = b->access = 0;
	b->length = b->mmap_off = b->pd_serial = b->addr = 0;
	l->decode(p + RS_BLOB_COMMON_END, b);
	/* Most blobs have no private part (every sim0 blob): no memcpy call
	 * on every import for nothing. */
	if (b->priv_len)
		memcpy(b->priv, p + RS_BLOB_COMMON_END + l->fields_len, b->priv_len);
	b->ledger = 0;
	if (b->has_ledger) {
		uint64_t serial = rs_get64(p + len - RS_BLOB_CRC_SIZE - RS_BLOB_LEDGER_SIZE);

		if (serial > UINT32_MAX)
			return corrupt("blob ledger serial %zu exceeds 32 bits (%zu bytes)",
				       (size_t)serial, len);
		b->ledger = (uint32_t)serial;
	}
	return RSHARE_OK;
}

int rs_blob_check_target(const struct rs_blob *b, int kind, const struct rs_ctx *ctx)
{
	if (b->kind != kind)
		return rs_fail(RSHARE_E_BLOB_KIND, 0, "blob holds %s %s, %s %s was expected",
			       rs_kind_article(b->kind), rs_kind_word(b->kind),
			       rs_kind_article(kind), rs_kind_word(kind));
	if (b->provider != ctx->ops->id || b->guid != ctx->guid)
		return rs_fail(RSHARE_E_DEVICE_MISMATCH, 0,
			       "blob is from device 0x%016" PRIx64 " (%s), this context is "
			       "device 0x%016" PRIx64 " (%s)",
			       b->guid, rs_provider_name(b->provider), ctx->guid, ctx->ops->name);
	if (b->table_id && ctx->table_id && b->table_id != ctx->table_id)
		return rs_fail(RSHARE_E_DEVICE_MISMATCH, 0,
			       "blob is from object table 0x%016" PRIx64 ", this context "
			       "shares table 0x%016" PRIx64 " (import the exporter's "
			       "device fd, not a newly opened device)",
			       b->table_id, ctx->table_id);
	return RSHARE_OK;
}

void rs_blob_init(struct rs_blob *b, int kind, const struct rs_ctx *ctx)
{
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->provider = ctx->ops->id;
	b->guid = ctx->guid;
	b->table_id = ctx->table_id;
}

void rs_blob_from_var(struct rs_blob *b, const struct rs_ctx *ctx,
		      const struct rs_var_info *var)
{
	rs_blob_init(b, RSHARE_KIND_VAR, ctx);
	b->handle = var->handle;
	b->serial = var->serial;
	b->page_id = var->page_id;
	b->length = var->length;
	b->mmap_off = var->mmap_off;
	b->priv_len = var->priv_len;
	memcpy(b->priv, var->priv, var->priv_len);
}

/* Field by field, not a zeroed struct: this is every VAR import's path,
 * and nothing reads priv past priv_len (providers copy priv_len bytes). */
void rs_var_from_blob(struct rs_var_info *var, const struct rs_blob *b)
{
	var->handle = b->handle;
	var->serial = b->serial;
	var->flags = 0;
	var->page_id = b->page_id;
	var->length = (uint32_t)b->length;
	var->mmap_off = b->mmap_off;
	var->priv_len = b->priv_len;
	var->prov = NULL;
	if (b->priv_len)
		memcpy(var->priv, b->priv, b->priv_len);
}
