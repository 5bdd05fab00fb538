/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Encoding and parsing of broker messages; see proto.h and docs/broker.md. */
#include "proto.h"

#include <string.h>

#include "util/error.h"
#include "util/le.h"

void rsb_put_header(uint8_t *h, uint8_t type, uint8_t flags, uint32_t len, int32_t status)
{
	memcpy(h, RSB_MAGIC, 4);
	rs_put16(h + 4, RSB_VERSION);
	h[6] = type;
	h[7] = flags;
	rs_put32(h + 8, len);
	rs_put32(h + 12, (uint32_t)status);
}

int rsb_parse_header(const uint8_t *msg, size_t len, struct rsb_header *h)
{
	uint16_t version;

	if (len < RSB_HDR)
		return rs_fail(RSHARE_E_PROTOCOL, 0,
			       "message of %zu bytes is shorter than the %d-byte header", len,
			       RSB_HDR);
	if (memcmp(msg, RSB_MAGIC, 4) != 0)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "not an rshare broker message (bad magic)");
	version = rs_get16(msg + 4);
	if (version != RSB_VERSION)
		return rs_fail(RSHARE_E_PROTOCOL, 0,
			       "broker protocol version %u, this side speaks %d", version,
			       RSB_VERSION);
	h->type = msg[6];
	h->flags = msg[7];
	h->len = rs_get32(msg + 8);
	h->status = (int32_t)rs_get32(msg + 12);
	if ((size_t)h->len != len - RSB_HDR)
		return rs_fail(RSHARE_E_PROTOCOL, 0,
			       "header announces a %u-byte body, the message has %zu", h->len,
			       len - RSB_HDR);
	return RSHARE_OK;
}

int rsb_check_name(const char *name, size_t len)
{
	if (len == 0 || len > RSHARE_SHARE_NAME_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "share name of %zu bytes (1..%d allowed)", len,
			       RSHARE_SHARE_NAME_MAX);
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (c == '/') {
			if (i == 0 || i + 1 == len || name[i - 1] == '/')
				return rs_fail(RSHARE_E_INVAL, 0,
					       "share name has an empty part (a leading, "
					       "trailing or double '/')");
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return rs_fail(RSHARE_E_INVAL, 0,
				       "share name has byte 0x%02x at %zu (allowed: "
				       "A-Z a-z 0-9 . _ - and '/' between parts)",
				       (unsigned char)c, i);
	}
	return RSHARE_OK;
}

/* Copy and check a name of n bytes at p. */
static int take_name(const uint8_t *p, size_t n, struct rsb_request *req)
{
	int status = rsb_check_name((const char *)p, n);

	if (status)
		return status;
	memcpy(req->name, p, n);
	req->name[n] = '\0';
	return RSHARE_OK;
}

static int bad_body(const char *what, size_t got, size_t want)
{
	return rs_fail(RSHARE_E_PROTOCOL, 0, "%s request body of %zu bytes, %zu expected",
		       what, got, want);
}

static int parse_publish(const uint8_t *b, size_t n, struct rsb_request *req)
{
	size_t name_len, ids, want;

	if (n < RSB_PUBLISH_FIXED)
		return bad_body("publish", n, RSB_PUBLISH_FIXED);
	req->flags = rs_get32(b);
	name_len = rs_get16(b + 4);
	req->n_uids = rs_get16(b + 6);
	req->n_gids = rs_get16(b + 8);
	req->payload_len = rs_get32(b + 12);
	if (req->flags & ~RSB_PUB_PERSISTENT)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "unknown publish flags 0x%x", req->flags);
	/* 0 before 1.2 (reserved): a 1.1 broker refuses extra fds cleanly. */
	req->n_extra = rs_get16(b + 10);
	if (req->n_extra > RSHARE_CHANNEL_FDS_MAX)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "publish announces %u extra fds (at most %d)",
			       req->n_extra, RSHARE_CHANNEL_FDS_MAX);
	if (req->n_uids > RSHARE_SHARE_IDS_MAX || req->n_gids > RSHARE_SHARE_IDS_MAX)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "%u uids and %u gids listed (at most %d each)",
			       req->n_uids, req->n_gids, RSHARE_SHARE_IDS_MAX);
	if (req->payload_len > RSHARE_PAYLOAD_MAX)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "payload of %u bytes (at most %d)",
			       req->payload_len, RSHARE_PAYLOAD_MAX);
	ids = 4 * (size_t)(req->n_uids + req->n_gids);
	want = RSB_PUBLISH_FIXED + name_len + ids + req->payload_len;
	if (n != want)
		return bad_body("publish", n, want);
	b += RSB_PUBLISH_FIXED;
	if (take_name(b, name_len, req))
		return RSHARE_E_INVAL;
	b += name_len;
	for (uint32_t i = 0; i < req->n_uids; i++, b += 4)
		req->uids[i] = rs_get32(b);
	for (uint32_t i = 0; i < req->n_gids; i++, b += 4)
		req->gids[i] = rs_get32(b);
	req->payload = b;
	return RSHARE_OK;
}

static int parse_attach(const uint8_t *b, size_t n, struct rsb_request *req)
{
	size_t name_len;

	if (n < RSB_ATTACH_FIXED)
		return bad_body("attach", n, RSB_ATTACH_FIXED);
	req->timeout_ms = rs_get32(b);
	req->cap = rs_get32(b + 4);
	name_len = rs_get16(b + 8);
	if (rs_get16(b + 10) != 0)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "reserved attach field is not 0");
	if (n != RSB_ATTACH_FIXED + name_len)
		return bad_body("attach", n, RSB_ATTACH_FIXED + name_len);
	return take_name(b + RSB_ATTACH_FIXED, name_len, req);
}

static int parse_withdraw(const uint8_t *b, size_t n, struct rsb_request *req)
{
	size_t name_len;

	if (n < RSB_WITHDRAW_FIXED)
		return bad_body("withdraw", n, RSB_WITHDRAW_FIXED);
	req->flags = rs_get32(b);
	name_len = rs_get16(b + 4);
	if (req->flags & ~RSB_WD_OWN)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "unknown withdraw flags 0x%x", req->flags);
	if (rs_get16(b + 6) != 0)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "reserved withdraw field is not 0");
	if (n != RSB_WITHDRAW_FIXED + name_len)
		return bad_body("withdraw", n, RSB_WITHDRAW_FIXED + name_len);
	return take_name(b + RSB_WITHDRAW_FIXED, name_len, req);
}

int rsb_parse_request(const uint8_t *msg, size_t len, struct rsb_request *req)
{
	struct rsb_header h = { 0 }; /* set on success; -O3 cannot tell */
	int status = rsb_parse_header(msg, len, &h);

	if (status)
		return status;
	memset(req, 0, sizeof(*req));
	req->type = h.type;
	if ((h.flags & ~(h.type == RSB_ATTACH ? RSB_FLAG_FDS : 0u)) || h.status != 0)
		return rs_fail(RSHARE_E_PROTOCOL, 0, "request with flags or status set");
	req->hflags = h.flags;
	switch (h.type) {
	case RSB_PUBLISH:
		return parse_publish(msg + RSB_HDR, h.len, req);
	case RSB_ATTACH:
		return parse_attach(msg + RSB_HDR, h.len, req);
	case RSB_WITHDRAW:
		return parse_withdraw(msg + RSB_HDR, h.len, req);
	case RSB_LIST:
		return h.len ? bad_body("list", h.len, 0) : RSHARE_OK;
	case RSB_WAITING:
		return h.len ? bad_body("waiting", h.len, 0) : RSHARE_OK;
	default:
		return rs_fail(RSHARE_E_PROTOCOL, 0, "unknown request type %u", h.type);
	}
}

size_t rsb_encode_publish(uint8_t *buf, const char *name, uint32_t flags,
			  const uint32_t *uids, uint32_t n_uids, const uint32_t *gids,
			  uint32_t n_gids, uint32_t n_extra, const void *payload, uint32_t len)
{
	size_t name_len = strlen(name);
	uint8_t *b = buf + RSB_HDR;
	size_t body = RSB_PUBLISH_FIXED + name_len + 4 * (size_t)(n_uids + n_gids) + len;

	rsb_put_header(buf, RSB_PUBLISH, 0, (uint32_t)body, 0);
	rs_put32(b, flags);
	rs_put16(b + 4, (uint16_t)name_len);
	rs_put16(b + 6, (uint16_t)n_uids);
	rs_put16(b + 8, (uint16_t)n_gids);
	rs_put16(b + 10, (uint16_t)n_extra);
	rs_put32(b + 12, len);
	b += RSB_PUBLISH_FIXED;
	memcpy(b, name, name_len);
	b += name_len;
	for (uint32_t i = 0; i < n_uids; i++, b += 4)
		rs_put32(b, uids[i]);
	for (uint32_t i = 0; i < n_gids; i++, b += 4)
		rs_put32(b, gids[i]);
	if (len)
		memcpy(b, payload, len);
	return RSB_HDR + body;
}

size_t rsb_encode_attach(uint8_t *buf, const char *name, uint32_t timeout_ms, uint32_t cap,
			 uint8_t hflags)
{
	size_t name_len = strlen(name);
	uint8_t *b = buf + RSB_HDR;

	rsb_put_header(buf, RSB_ATTACH, hflags, (uint32_t)(RSB_ATTACH_FIXED + name_len), 0);
	rs_put32(b, timeout_ms);
	rs_put32(b + 4, cap);
	rs_put16(b + 8, (uint16_t)name_len);
	rs_put16(b + 10, 0);
	memcpy(b + RSB_ATTACH_FIXED, name, name_len);
	return RSB_HDR + RSB_ATTACH_FIXED + name_len;
}

size_t rsb_encode_withdraw(uint8_t *buf, const char *name, uint32_t flags)
{
	size_t name_len = strlen(name);
	uint8_t *b = buf + RSB_HDR;

	rsb_put_header(buf, RSB_WITHDRAW, 0, (uint32_t)(RSB_WITHDRAW_FIXED + name_len), 0);
	rs_put32(b, flags);
	rs_put16(b + 4, (uint16_t)name_len);
	rs_put16(b + 6, 0);
	memcpy(b + RSB_WITHDRAW_FIXED, name, name_len);
	return RSB_HDR + RSB_WITHDRAW_FIXED + name_len;
}

size_t rsb_encode_list(uint8_t *buf)
{
	return rsb_encode_bare(buf, RSB_LIST);
}

size_t rsb_encode_bare(uint8_t *buf, uint8_t type)
{
	rsb_put_header(buf, type, 0, 0, 0);
	return RSB_HDR;
}
