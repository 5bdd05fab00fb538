#include "blob.h"

#include <inttypes.h>
#include <string.h>

#include "util/crc32c.h"
#include "util/error.h"
#include "util/le.h"

_Static_assert(RS_BLOB_COMMON_END + RS_BLOB_VAR_FIELDS + RS_PRIV_MAX +
		       RS_BLOB_CRC_SIZE <= RSHARE_BLOB_MAX,
	       "largest blob must fit RSHARE_BLOB_MAX");

static size_t blob_size(int kind, size_t priv_len)
{
	return RS_BLOB_COMMON_END + (kind == RSHARE_KIND_VAR ? RS_BLOB_VAR_FIELDS : 0) +
	       priv_len + RS_BLOB_CRC_SIZE;
}

size_t rs_blob_encode(const struct rs_blob *b, uint8_t *out)
{
	size_t n = blob_size(b->kind, b->priv_len), off = RS_BLOB_COMMON_END;

	memcpy(out + RS_BLOB_OFF_MAGIC, RS_BLOB_MAGIC, 4);
	out[RS_BLOB_OFF_FORMAT] = RS_BLOB_FORMAT;
	out[RS_BLOB_OFF_KIND] = (uint8_t)b->kind;
	out[RS_BLOB_OFF_PROVIDER] = (uint8_t)b->provider;
	out[RS_BLOB_OFF_FLAGS] = 0;
	rs_put16(out + RS_BLOB_OFF_LENGTH, (uint16_t)n);
	rs_put16(out + RS_BLOB_OFF_PRIV_LEN, b->priv_len);
	rs_put32(out + RS_BLOB_OFF_HANDLE, b->handle);
	rs_put64(out + RS_BLOB_OFF_GUID, b->guid);
	rs_put64(out + RS_BLOB_OFF_TABLE, b->table_id);
	rs_put64(out + RS_BLOB_OFF_SERIAL, b->serial);
	if (b->kind == RSHARE_KIND_VAR) {
		rs_put32(out + off, b->page_id);
		rs_put32(out + off + 4, b->length);
		rs_put64(out + off + 8, b->mmap_off);
		off += RS_BLOB_VAR_FIELDS;
	}
	memcpy(out + off, b->priv, b->priv_len);
	off += b->priv_len;
	rs_put32(out + off, rs_crc32c(out, off));
	return n;
}

static int corrupt(const char *why, size_t a, size_t b)
{
	return rs_fail(RSHARE_E_BLOB_CORRUPT, 0, why, a, b);
}

int rs_blob_decode(const void *buf, size_t len, struct rs_blob *b)
{
	const uint8_t *p = buf;
	size_t want, off = RS_BLOB_COMMON_END;
	uint32_t crc;

	if (!buf)
		return rs_fail(RSHARE_E_INVAL, 0, "blob is NULL");
	if (len < RS_BLOB_MIN)
		return corrupt("blob truncated: %zu bytes, at least %zu needed", len,
			       RS_BLOB_MIN);
	if (memcmp(p + RS_BLOB_OFF_MAGIC, RS_BLOB_MAGIC, 4) != 0)
		return corrupt("not an rshare blob: bad magic (%zu bytes, first %zu checked)",
			       len, (size_t)4);
	if (p[RS_BLOB_OFF_FORMAT] > RS_BLOB_FORMAT)
		return rs_fail(RSHARE_E_BLOB_VERSION, 0,
			       "blob format %u is newer than this library's %u",
			       p[RS_BLOB_OFF_FORMAT], RS_BLOB_FORMAT);
	if (p[RS_BLOB_OFF_FORMAT] == 0)
		return corrupt("blob format %zu is invalid (library has %zu)",
			       (size_t)0, (size_t)RS_BLOB_FORMAT);
	if (rs_get16(p + RS_BLOB_OFF_LENGTH) != len)
		return corrupt("blob length field says %zu bytes, %zu given",
			       rs_get16(p + RS_BLOB_OFF_LENGTH), len);
	b->kind = p[RS_BLOB_OFF_KIND];
	if (b->kind != RSHARE_KIND_PD && b->kind != RSHARE_KIND_VAR)
		return corrupt("blob kind %zu is unknown (%zu bytes)", (size_t)b->kind, len);
	b->priv_len = rs_get16(p + RS_BLOB_OFF_PRIV_LEN);
	if (b->priv_len > RS_PRIV_MAX)
		return corrupt("blob private part of %zu bytes exceeds %zu",
			       b->priv_len, (size_t)RS_PRIV_MAX);
	want = blob_size(b->kind, b->priv_len);
	if (want != len)
		return corrupt("blob fields need %zu bytes, length is %zu", want, len);
	crc = rs_get32(p + len - RS_BLOB_CRC_SIZE);
	if (crc != rs_crc32c(p, len - RS_BLOB_CRC_SIZE))
		return corrupt("blob checksum mismatch (%zu bytes, crc 0x%zx)", len,
			       (size_t)crc);
	b->provider = p[RS_BLOB_OFF_PROVIDER];
	if (b->provider != RSHARE_PROVIDER_HW && b->provider != RSHARE_PROVIDER_SIM)
		return corrupt("blob provider %zu is unknown (%zu bytes)",
			       (size_t)b->provider, len);
	if (p[RS_BLOB_OFF_FLAGS] != 0)
		return corrupt("blob flags 0x%zx are not defined (%zu bytes)",
			       (size_t)p[RS_BLOB_OFF_FLAGS], len);
	b->handle = rs_get32(p + RS_BLOB_OFF_HANDLE);
	b->guid = rs_get64(p + RS_BLOB_OFF_GUID);
	b->table_id = rs_get64(p + RS_BLOB_OFF_TABLE);
	b->serial = rs_get64(p + RS_BLOB_OFF_SERIAL);
	b->page_id = b->length = 0;
	b->mmap_off = 0;
	if (b->kind == RSHARE_KIND_VAR) {
		b->page_id = rs_get32(p + off);
		b->length = rs_get32(p + off + 4);
		b->mmap_off = rs_get64(p + off + 8);
		off += RS_BLOB_VAR_FIELDS;
	}
	memcpy(b->priv, p + off, b->priv_len);
	return RSHARE_OK;
}

int rs_copy_out(const void *src, size_t n, void *buf, size_t cap, size_t *len)
{
	if (!len)
		return rs_fail(RSHARE_E_INVAL, 0, "len is NULL");
	if (!buf || cap < n) {
		*len = n;
		return rs_fail(RSHARE_E_NOSPACE, 0, "buffer of %zu bytes too small, %zu needed",
			       buf ? cap : 0, n);
	}
	memcpy(buf, src, n);
	*len = n;
	return RSHARE_OK;
}

int rs_copy_str(const char *src, size_t n, char *buf, size_t cap, size_t *len)
{
	if (!len)
		return rs_fail(RSHARE_E_INVAL, 0, "len is NULL");
	if (!buf || cap < n + 1) {
		*len = n;
		return rs_fail(RSHARE_E_NOSPACE, 0,
			       "buffer of %zu bytes too small, %zu needed (with NUL)",
			       buf ? cap : 0, n + 1);
	}
	memcpy(buf, src, n);
	buf[n] = '\0';
	*len = n;
	return RSHARE_OK;
}

static const char *kind_word(int kind)
{
	return kind == RSHARE_KIND_PD ? "PD" : "VAR";
}

int rs_blob_check_target(const struct rs_blob *b, int kind, const struct rs_ctx *ctx)
{
	if (b->kind != kind)
		return rs_fail(RSHARE_E_BLOB_KIND, 0, "blob holds a %s, a %s was expected",
			       kind_word(b->kind), kind_word(kind));
	if (b->provider != ctx->ops->id || b->guid != ctx->guid)
		return rs_fail(RSHARE_E_DEVICE_MISMATCH, 0,
			       "blob is from device 0x%016" PRIx64 " (%s), this context is "
			       "device 0x%016" PRIx64 " (%s)",
			       b->guid, b->provider == RSHARE_PROVIDER_SIM ? "sim" : "hw",
			       ctx->guid, ctx->ops->name);
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

void rs_var_from_blob(struct rs_var_info *var, const struct rs_blob *b)
{
	memset(var, 0, sizeof(*var));
	var->handle = b->handle;
	var->serial = b->serial;
	var->page_id = b->page_id;
	var->length = b->length;
	var->mmap_off = b->mmap_off;
	var->priv_len = b->priv_len;
	memcpy(var->priv, b->priv, b->priv_len);
}
