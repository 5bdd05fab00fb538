/*
 * The blob parser against hostile input: every truncation and every
 * single-bit flip of valid PD and VAR blobs is refused with the matching
 * status, and never read past len (ASan watches the copies made here).
 */
#include <stdint.h>

#include "harness.h"

static int refused(int st)
{
	return st == RSHARE_E_BLOB_CORRUPT || st == RSHARE_E_BLOB_VERSION;
}

/* Every prefix and every bit flip of blob: all refused by every parser
 * entry point, and the import paths stay refusing too. */
static void battery(rshare_device *dev, const unsigned char *blob, size_t len, int is_pd)
{
	unsigned char copy[RSHARE_BLOB_MAX];
	char out[512];
	size_t n;
	int kind, flips = 0, version_flips = 0;
	rshare_pd *pd;
	rshare_var *var;

	for (size_t cut = 0; cut < len; cut++) {
		/* An exact-size heap copy: any read past cut is an ASan error. */
		unsigned char *p = malloc(cut ? cut : 1);
		memcpy(p, blob, cut);
		CHECK_ST(rshare_blob_kind(p, cut, &kind), RSHARE_E_BLOB_CORRUPT);
		CHECK_ST(rshare_blob_describe(p, cut, out, sizeof(out), &n),
			 RSHARE_E_BLOB_CORRUPT);
		if (is_pd)
			CHECK_ST(rshare_pd_import(dev, p, cut, &pd), RSHARE_E_BLOB_CORRUPT);
		else
			CHECK_ST(rshare_var_import(dev, p, cut, &var), RSHARE_E_BLOB_CORRUPT);
		free(p);
	}
	for (size_t bit = 0; bit < len * 8; bit++) {
		int st;
		memcpy(copy, blob, len);
		copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		st = rshare_blob_kind(copy, len, &kind);
		CHECK(refused(st));
		/* Only the format byte can say "newer version". */
		if (st == RSHARE_E_BLOB_VERSION) {
			CHECK(bit / 8 == 4);
			version_flips++;
		}
		st = is_pd ? rshare_pd_import(dev, copy, len, &pd)
			   : rshare_var_import(dev, copy, len, &var);
		CHECK(refused(st));
		flips++;
	}
	CHECK(flips == (int)len * 8);
	CHECK(version_flips == 7); /* format 1 -> 3, 5, 9, ... 129 */
	/* One byte too many is refused as well. */
	memcpy(copy, blob, len);
	copy[len] = 0;
	CHECK_ST(rshare_blob_kind(copy, len + 1, &kind), RSHARE_E_BLOB_CORRUPT);
}

/* The documented checksum, computed the slow way (abi/BLOB-FORMAT.md):
 * CRC-32C, reflected polynomial 0x82F63B78, init and final xor ~0. */
static uint32_t reference_crc32c(const unsigned char *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return crc ^ 0xffffffffu;
}

static void check_layout(const unsigned char *b, size_t len, int kind)
{
	uint32_t crc = (uint32_t)b[len - 4] | (uint32_t)b[len - 3] << 8 |
		       (uint32_t)b[len - 2] << 16 | (uint32_t)b[len - 1] << 24;

	CHECK(memcmp(b, "RSHB", 4) == 0 && b[4] == 1 && b[5] == kind && b[7] == 0);
	CHECK((size_t)(b[8] | b[9] << 8) == len);
	CHECK(crc == reference_crc32c(b, len - 4));
}

int main(void)
{
	unsigned char pd_blob[RSHARE_BLOB_MAX], var_blob[RSHARE_BLOB_MAX], b[RSHARE_BLOB_MAX];
	char json[512];
	rshare_device *dev;
	rshare_pd *pd, *imp;
	rshare_var *var;
	size_t pd_len, var_len, n;
	int kind;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	pd_len = export_pd(pd, pd_blob);
	var_len = export_var(var, var_blob);
	CHECK(pd_len == 44 && var_len == 60);
	check_layout(pd_blob, pd_len, RSHARE_KIND_PD);
	check_layout(var_blob, var_len, RSHARE_KIND_VAR);

	battery(dev, pd_blob, pd_len, 1);
	battery(dev, var_blob, var_len, 0);

	/* Specific refusals and their statuses. */
	CHECK_ST(rshare_blob_kind(NULL, 44, &kind), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_kind(pd_blob, pd_len, NULL), RSHARE_E_INVAL);
	memcpy(b, pd_blob, pd_len);
	b[0] = 'X';
	CHECK_ST(rshare_blob_kind(b, pd_len, &kind), RSHARE_E_BLOB_CORRUPT);
	CHECK(strstr(rshare_last_error(), "magic") != NULL);
	memcpy(b, pd_blob, pd_len);
	b[4] = 2; /* a format from the future, whatever follows */
	CHECK_ST(rshare_blob_kind(b, pd_len, &kind), RSHARE_E_BLOB_VERSION);
	CHECK(strstr(rshare_last_error(), "newer") != NULL);
	CHECK_ST(rshare_pd_import(dev, b, pd_len, &imp), RSHARE_E_BLOB_VERSION);
	memcpy(b, pd_blob, pd_len);
	b[pd_len - 1] ^= 0xff;
	CHECK_ST(rshare_blob_kind(b, pd_len, &kind), RSHARE_E_BLOB_CORRUPT);
	CHECK(strstr(rshare_last_error(), "checksum") != NULL);
	memset(b, 0, sizeof(b));
	CHECK_ST(rshare_blob_kind(b, sizeof(b), &kind), RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(rshare_blob_kind(pd_blob, 0, &kind), RSHARE_E_BLOB_CORRUPT);

	/* Describe: JSON with the fields, and the NOSPACE convention. */
	CHECK_OK(rshare_blob_describe(pd_blob, pd_len, json, sizeof(json), &n));
	CHECK(n == strlen(json));
	CHECK(json[0] == '{' && json[n - 1] == '}');
	CHECK(strstr(json, "\"kind\":\"pd\"") && strstr(json, "\"provider\":\"sim\""));
	CHECK(strstr(json, "\"handle\":0") && strstr(json, "\"guid\":\"0x"));
	CHECK(!strstr(json, "page_id"));
	CHECK_OK(rshare_blob_describe(var_blob, var_len, json, sizeof(json), &n));
	CHECK(strstr(json, "\"kind\":\"var\"") && strstr(json, "\"page_id\":") &&
	      strstr(json, "\"mmap_off\":") && strstr(json, "\"length\":"));
	CHECK_ST(rshare_blob_describe(var_blob, var_len, NULL, 0, &n), RSHARE_E_NOSPACE);
	CHECK(n == strlen(json));
	CHECK_ST(rshare_blob_describe(var_blob, var_len, json, n, &n), RSHARE_E_NOSPACE);
	CHECK_OK(rshare_blob_describe(var_blob, var_len, json, n + 1, &n));
	CHECK_ST(rshare_blob_describe(var_blob, var_len, json, sizeof(json), NULL),
		 RSHARE_E_INVAL);

	/* The originals were never harmed. */
	CHECK_OK(rshare_pd_import(dev, pd_blob, pd_len, &imp));
	CHECK_OK(rshare_pd_unimport(imp));
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
	TEST_DONE();
}
