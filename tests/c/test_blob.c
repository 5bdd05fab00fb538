/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The blob parser against hostile input: every truncation and every
 * single-bit flip of valid PD, VAR, MR and DM blobs is refused with the
 * matching status, and never read past len (ASan watches the copies made
 * here). MR and DM blobs are exported where sim0 has them, else built here
 * byte by byte (the parser does not care who made them).
 */
#include <stdint.h>

#include "harness.h"

static int refused(int st)
{
	return st == RSHARE_E_BLOB_CORRUPT || st == RSHARE_E_BLOB_VERSION;
}

/* The import call of the blob's kind (an MR imports into pd). */
static int import(rshare_device *dev, rshare_pd *pd, int kind, const void *b, size_t len)
{
	void *h;

	switch (kind) {
	case RSHARE_KIND_PD: return rshare_pd_import(dev, b, len, (rshare_pd **)&h);
	case RSHARE_KIND_VAR: return rshare_var_import(dev, b, len, (rshare_var **)&h);
	case RSHARE_KIND_MR: return rshare_mr_import(pd, b, len, (rshare_mr **)&h);
	default: return rshare_dm_import(dev, b, len, (rshare_dm **)&h);
	}
}

/* Every prefix and every bit flip of blob: all refused by every parser
 * entry point, and the import paths stay refusing too. */
static void battery(rshare_device *dev, rshare_pd *target, const unsigned char *blob,
		    size_t len, int blob_kind)
{
	unsigned char copy[RSHARE_BLOB_MAX];
	char out[512];
	size_t n;
	uint64_t v;
	int kind, flips = 0, version_flips = 0;

	for (size_t cut = 0; cut < len; cut++) {
		/* An exact-size heap copy: any read past cut is an ASan error. */
		unsigned char *p = malloc(cut ? cut : 1);
		memcpy(p, blob, cut);
		CHECK_ST(rshare_blob_kind(p, cut, &kind), RSHARE_E_BLOB_CORRUPT);
		CHECK_ST(rshare_blob_describe(p, cut, out, sizeof(out), &n),
			 RSHARE_E_BLOB_CORRUPT);
		CHECK_ST(rshare_blob_field(p, cut, RSHARE_FIELD_KIND, &v), RSHARE_E_BLOB_CORRUPT);
		CHECK_ST(import(dev, target, blob_kind, p, cut), RSHARE_E_BLOB_CORRUPT);
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
		CHECK(refused(rshare_blob_field(copy, len, RSHARE_FIELD_HANDLE, &v)));
		st = import(dev, target, blob_kind, copy, len);
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

static void put(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A well-formed blob of kind on dev's object table, built byte by byte. */
static size_t craft(const unsigned char *pd_blob, int kind,
		    unsigned char *b)
{
	size_t fields = kind == RSHARE_KIND_MR ? 40 : 8, n = 40 + fields + 4;

	memcpy(b, pd_blob, 40); /* magic .. serial of a real blob of dev */
	b[5] = (unsigned char)kind;
	put(b + 8, n, 2);
	for (size_t i = 0; i < fields; i++)
		b[40 + i] = (unsigned char)(i * 7 + 1);
	put(b + 44, RSHARE_ACCESS_LOCAL_WRITE, 4); /* MR: valid access; DM: length bits */
	put(b + n - 4, reference_crc32c(b, n - 4), 4);
	return n;
}

/* MR and DM blobs: exported where sim0 has them, else crafted. */
static size_t mr_dm_blob(rshare_device *dev, rshare_pd *pd, const unsigned char *pd_blob,
			 int kind, unsigned char *b, void **keep)
{
	static unsigned char mem[256];
	uint32_t caps = 0;
	size_t len = 0;

	*keep = NULL;
	REQUIRE_OK(rshare_device_caps(dev, &caps));
	if (kind == RSHARE_KIND_MR && (caps & RSHARE_CAP_MR)) {
		REQUIRE_OK(rshare_mr_reg(pd, mem, sizeof(mem), RSHARE_ACCESS_LOCAL_WRITE,
					 (rshare_mr **)keep));
		REQUIRE_OK(rshare_mr_export(*keep, b, RSHARE_BLOB_MAX, &len));
		return len;
	}
	if (kind == RSHARE_KIND_DM && (caps & RSHARE_CAP_DM)) {
		REQUIRE_OK(rshare_dm_alloc(dev, 256, (rshare_dm **)keep));
		REQUIRE_OK(rshare_dm_export(*keep, b, RSHARE_BLOB_MAX, &len));
		return len;
	}
	printf("%s blob crafted: sim0 lacks RSHARE_CAP_%s\n", kind == RSHARE_KIND_MR ? "MR" : "DM",
	       kind == RSHARE_KIND_MR ? "MR" : "DM");
	return craft(pd_blob, kind, b);
}

/* Every case: sim0, a PD and a VAR, their blobs; an MR and device memory
 * and theirs (crafted where sim0 lacks them). */
static rshare_device *dev;
static rshare_pd *pd;
static rshare_var *var;
static void *mr, *dm;
static unsigned char pd_blob[RSHARE_BLOB_MAX], var_blob[RSHARE_BLOB_MAX];
static unsigned char mr_blob[RSHARE_BLOB_MAX], dm_blob[RSHARE_BLOB_MAX];
static size_t pd_len, var_len, mr_len, dm_len;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
	pd_len = export_pd(pd, pd_blob);
	var_len = export_var(var, var_blob);
	mr_len = mr_dm_blob(dev, pd, pd_blob, RSHARE_KIND_MR, mr_blob, &mr);
	dm_len = mr_dm_blob(dev, pd, pd_blob, RSHARE_KIND_DM, dm_blob, &dm);
}

/* The originals were never harmed. */
static void teardown(void)
{
	rshare_pd *imp;

	CHECK_OK(rshare_pd_import(dev, pd_blob, pd_len, &imp));
	CHECK_OK(rshare_pd_unimport(imp));
	if (mr)
		CHECK_OK(rshare_mr_dereg(mr));
	if (dm)
		CHECK_OK(rshare_dm_free(dm));
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

static void case_layout(void)
{
	CHECK(pd_len == 44 && var_len == 60);
	check_layout(pd_blob, pd_len, RSHARE_KIND_PD);
	check_layout(var_blob, var_len, RSHARE_KIND_VAR);
	CHECK(mr_len == 84 && dm_len == 52);
	check_layout(mr_blob, mr_len, RSHARE_KIND_MR);
	check_layout(dm_blob, dm_len, RSHARE_KIND_DM);
}

static void case_battery_pd(void)
{
	battery(dev, pd, pd_blob, pd_len, RSHARE_KIND_PD);
}

static void case_battery_var(void)
{
	battery(dev, pd, var_blob, var_len, RSHARE_KIND_VAR);
}

static void case_battery_mr(void)
{
	battery(dev, pd, mr_blob, mr_len, RSHARE_KIND_MR);
}

static void case_battery_dm(void)
{
	battery(dev, pd, dm_blob, dm_len, RSHARE_KIND_DM);
}

/* Specific refusals and their statuses. */
static void case_refusals(void)
{
	unsigned char b[RSHARE_BLOB_MAX];
	rshare_pd *imp;
	int kind;

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
}

/* Describe: JSON with the fields, and the NOSPACE convention. */
static void case_describe(void)
{
	char json[512];
	size_t n;

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
}

#define T_PROGRAM_test_blob ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
