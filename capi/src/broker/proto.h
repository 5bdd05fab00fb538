/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker's wire protocol (docs/broker.md): one message per SOCK_SEQPACKET
 * record, a 16-byte header and a body whose length the header states.
 *
 * Header (little-endian): magic "RSBK", u16 version, u8 type, u8 flags,
 * u32 body length, i32 status (replies; 0 in requests).
 *
 * Both sides parse what the other sent with the functions here: they read
 * only inside the given length and copy every field they keep, so a
 * message can come from anyone.
 */
#ifndef RSHARE_BROKER_PROTO_H
#define RSHARE_BROKER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "rshare/rshare.h"

#define RSB_MAGIC "RSBK"
#define RSB_VERSION 1
#define RSB_HDR 16

enum rsb_type {
	RSB_PUBLISH = 1,
	RSB_ATTACH = 2,
	RSB_WITHDRAW = 3,
	RSB_LIST = 4,
	RSB_WAITING = 5, /* since 1.2: the waiting attaches, replied as a list is */
	RSB_REPLY = 0x80 /* a reply's type is its request's | RSB_REPLY */
};

#define RSB_FLAG_MORE 1u             /* header: another reply message follows */
#define RSB_FLAG_FDS 2u              /* attach request header (1.2): the reply may carry
				      * a share's extra fds (a 1.1 broker refuses the flag) */
#define RSB_FLAG_LEDGER 4u           /* attach reply header (1.2): the device's fds are two,
				      * its command fd and its ledger's; the fds after
				      * the device's are the share's extra fds */
#define RSB_PUB_PERSISTENT 1u        /* publish body flags */
#define RSB_WD_OWN 1u                /* withdraw: only a share this connection published */
#define RSB_WAIT_FOREVER 0xffffffffu /* attach timeout */

#define RSB_PUBLISH_FIXED 16
#define RSB_ATTACH_FIXED 12
#define RSB_WITHDRAW_FIXED 8
/* The longest request: a publish with everything at its limit. */
#define RSB_BODY_MAX (RSB_PUBLISH_FIXED + RSHARE_SHARE_NAME_MAX + \
		      8 * RSHARE_SHARE_IDS_MAX + RSHARE_PAYLOAD_MAX)
#define RSB_MSG_MAX (RSB_HDR + RSB_BODY_MAX)
#define RSB_TEXT_MAX 512   /* an error reply's message */
#define RSB_CHUNK 32768    /* list replies are cut in messages of this size */

struct rsb_header {
	uint8_t type, flags;
	uint32_t len;
	int32_t status;
};

/* A parsed request; name is NUL-terminated, payload points into the
 * message that was parsed. */
struct rsb_request {
	uint8_t type;
	uint8_t hflags; /* the header's flags: RSB_FLAG_FDS on an attach */
	uint32_t flags;
	char name[RSHARE_SHARE_NAME_MAX + 1];
	uint32_t timeout_ms, cap;
	uint32_t n_uids, n_gids;
	uint32_t n_extra; /* publish (1.2): how many of its fds are extra (the last ones) */
	uint32_t uids[RSHARE_SHARE_IDS_MAX], gids[RSHARE_SHARE_IDS_MAX];
	const uint8_t *payload;
	uint32_t payload_len;
};

void rsb_put_header(uint8_t *h, uint8_t type, uint8_t flags, uint32_t len, int32_t status);
/* Check magic, version and that the body is exactly len - RSB_HDR bytes. */
int rsb_parse_header(const uint8_t *msg, size_t len, struct rsb_header *h);
/* Parse a whole request message (header included). RSHARE_E_PROTOCOL or
 * RSHARE_E_INVAL (a bad name) with rs_fail()'s message on failure. */
int rsb_parse_request(const uint8_t *msg, size_t len, struct rsb_request *req);
/* 1..RSHARE_SHARE_NAME_MAX of [A-Za-z0-9._-] in non-empty '/'-separated parts. */
int rsb_check_name(const char *name, size_t len);

/* Request encoders: write the message into buf (room for RSB_MSG_MAX),
 * return its length. The arguments were validated by the caller. */
size_t rsb_encode_publish(uint8_t *buf, const char *name, uint32_t flags,
			  const uint32_t *uids, uint32_t n_uids, const uint32_t *gids,
			  uint32_t n_gids, uint32_t n_extra, const void *payload, uint32_t len);
/* hflags: the header's flags, RSB_FLAG_FDS or 0. */
size_t rsb_encode_attach(uint8_t *buf, const char *name, uint32_t timeout_ms, uint32_t cap,
			 uint8_t hflags);
size_t rsb_encode_withdraw(uint8_t *buf, const char *name, uint32_t flags);
size_t rsb_encode_list(uint8_t *buf);
/* A request without a body (RSB_LIST, RSB_WAITING). */
size_t rsb_encode_bare(uint8_t *buf, uint8_t type);

#endif
