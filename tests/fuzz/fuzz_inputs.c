/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer target for everything that parses outside input: blobs of every
 * kind (PD, VAR, MR, DM; every scalar field, every import; as
 * given, and with their length and checksum repaired so the fuzzer reaches
 * the fields behind the CRC), the text form, and channel messages. The
 * first byte picks the entry point; 5 is the broker's request parser. Built with clang's -fsanitize=fuzzer,
 * address,undefined; any crash, leak or sanitizer report fails the run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/proto.h"
#include "rshare/rshare.h"
#include "util/crc32c.h"

static rshare_device *dev;
static rshare_pd *target; /* where MR blobs are imported */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (rshare_device_open("sim0", &dev) != RSHARE_OK ||
	    rshare_pd_alloc(dev, &target) != RSHARE_OK)
		abort();
	return 0;
}

/* Every consumer of a blob; whatever they accept is released again. */
static void try_blob(const uint8_t *b, size_t len)
{
	char out[RSHARE_TEXT_MAX + 512];
	size_t n;
	int kind;
	rshare_pd *pd;
	rshare_var *var;
	rshare_mr *mr;
	rshare_dm *dm;
	uint64_t v;
	void *addr;

	rshare_blob_kind(b, len, &kind);
	for (int f = 0; f <= RSHARE_FIELD_ACCESS + 1; f++)
		rshare_blob_field(b, len, f, &v);
	rshare_blob_describe(b, len, out, sizeof(out), &n);
	if (rshare_blob_to_text(b, len, out, sizeof(out), &n) == RSHARE_OK) {
		uint8_t back[RSHARE_BLOB_MAX];
		if (rshare_blob_from_text(out, back, sizeof(back), &n) != RSHARE_OK ||
		    n != len || memcmp(back, b, len) != 0)
			abort(); /* the text form must round-trip */
	}
	if (rshare_pd_import(dev, b, len, &pd) == RSHARE_OK)
		rshare_pd_unimport(pd);
	if (rshare_var_import(dev, b, len, &var) == RSHARE_OK) {
		rshare_var_map(var, &addr);
		rshare_var_unimport(var);
	}
	if (rshare_mr_import(target, b, len, &mr) == RSHARE_OK)
		rshare_mr_unimport(mr);
	if (rshare_dm_import(dev, b, len, &dm) == RSHARE_OK) {
		uint8_t buf[16];
		rshare_dm_read(dm, 0, buf, sizeof(buf));
		rshare_dm_unimport(dm);
	}
}

/* Make the length field and the CRC agree with the bytes. */
static size_t repair(const uint8_t *in, size_t size, uint8_t *b)
{
	size_t len = size > RSHARE_BLOB_MAX ? RSHARE_BLOB_MAX : size;
	uint32_t crc;

	memcpy(b, in, len);
	if (len < 44)
		return len;
	memcpy(b, "RSHB", 4);
	b[8] = (uint8_t)len;
	b[9] = (uint8_t)(len >> 8);
	crc = rs_crc32c(b, len - 4);
	for (int i = 0; i < 4; i++)
		b[len - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
	return len;
}

static void try_channel(const uint8_t *data, size_t size, size_t cap)
{
	uint8_t *payload = malloc(cap ? cap : 1);
	rshare_device *got;
	size_t len;
	int sv[2];

	if (!payload || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		abort();
	/* Whatever the bytes claim, the peer then hangs up: never a hang. */
	if (size && write(sv[0], data, size) < 0)
		abort();
	shutdown(sv[0], SHUT_WR);
	while (rshare_channel_recv(sv[1], &got, payload, cap, &len) == RSHARE_OK)
		rshare_device_close(got);
	close(sv[0]);
	close(sv[1]);
	free(payload);
}

/* A broker request, in a buffer of its exact size. Whatever the parser
 * accepts must encode back to the same bytes: every field it keeps is
 * checked, every reserved one is zero. */
static void try_broker(const uint8_t *data, size_t size)
{
	uint8_t *msg = malloc(size ? size : 1), *out = malloc(RSB_MSG_MAX);
	struct rsb_request req;
	size_t n = 0;

	if (!msg || !out)
		abort();
	memcpy(msg, data, size);
	if (rsb_parse_request(msg, size, &req) == RSHARE_OK) {
		switch (req.type) {
		case RSB_PUBLISH:
			n = rsb_encode_publish(out, req.name, req.flags, req.uids, req.n_uids, req.gids,
					       req.n_gids, req.n_extra, req.payload, req.payload_len);
			break;
		case RSB_ATTACH:
			n = rsb_encode_attach(out, req.name, req.timeout_ms, req.cap, req.hflags);
			break;
		case RSB_WITHDRAW:
			n = rsb_encode_withdraw(out, req.name, req.flags);
			break;
		case RSB_LIST:
			n = rsb_encode_list(out);
			break;
		case RSB_WAITING:
			n = rsb_encode_bare(out, RSB_WAITING);
			break;
		default:
			abort(); /* accepted an unknown type */
		}
		if (n != size || memcmp(out, msg, size) != 0)
			abort();
	}
	free(msg);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t b[RSHARE_BLOB_MAX];
	char *text;

	if (size < 1)
		return 0;
	switch (data[0] % 6) {
	case 0:
		try_blob(data + 1, size - 1);
		break;
	case 1:
		try_blob(b, repair(data + 1, size - 1, b));
		break;
	case 2:
		text = malloc(size);
		if (!text)
			abort();
		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		rshare_blob_from_text(text, b, sizeof(b), &size);
		free(text);
		break;
	case 3:
		try_channel(data + 1, size - 1, 16);
		break;
	case 4:
		try_channel(data + 1, size - 1, RSHARE_PAYLOAD_MAX);
		break;
	case 5:
		try_broker(data + 1, size - 1);
		break;
	}
	return 0;
}
