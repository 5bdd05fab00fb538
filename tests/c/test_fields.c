/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The 1.1 scalar API on the simulated device: the version number, device
 * capabilities, the native escape hatch (refused on sim0), rshare_var_handle
 * and rshare_blob_field on every field of every kind, against blobs made by
 * the library and blobs built here byte by byte (abi/BLOB-FORMAT.md).
 */
#include <stdint.h>

#include "harness.h"

static uint32_t crc32c(const unsigned char *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return crc ^ 0xffffffffu;
}

static void put(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A well-formed blob of kind with nfields bytes of kind fields (given). */
static size_t make_blob(unsigned char *b, int kind, const unsigned char *fields, size_t nfields)
{
	size_t n = 40 + nfields + 4;

	memset(b, 0, n);
	memcpy(b, "RSHB", 4);
	b[4] = 1;
	b[5] = (unsigned char)kind;
	b[6] = RSHARE_PROVIDER_SIM;
	put(b + 8, n, 2);
	put(b + 12, 7, 4);                      /* handle */
	put(b + 16, 0x02c0de5100000030ull, 8); /* guid */
	put(b + 24, 0xabcdull, 8);             /* table */
	put(b + 32, 42, 8);                     /* serial */
	memcpy(b + 40, fields, nfields);
	put(b + n - 4, crc32c(b, n - 4), 4);
	return n;
}

static uint64_t field(const unsigned char *b, size_t len, int f)
{
	uint64_t v = 0xdeadbeef;

	CHECK_OK(rshare_blob_field(b, len, f, &v));
	return v;
}

static void check_absent(const unsigned char *b, size_t len, const int *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0x5a5a;
		CHECK_ST(rshare_blob_field(b, len, fields[i], &v), RSHARE_E_NOT_FOUND);
		CHECK(v == 0x5a5a); /* out values only on success */
		CHECK_MSG("has no field");
	}
}

/* A crafted MR blob: every field read back, the absent ones refused. */
static void case_crafted_mr(void)
{
	unsigned char f[40], b[RSHARE_BLOB_MAX];
	char json[512];
	size_t len, n;
	int kind;

	put(f, 5, 4);                       /* pd_handle */
	put(f + 4, RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ, 4);
	put(f + 8, 9, 8);                   /* pd_serial */
	put(f + 16, 0x7f0000001000ull, 8);  /* addr */
	put(f + 24, 8192, 8);               /* length */
	put(f + 32, 0x1111, 4);             /* lkey */
	put(f + 36, 0x2222, 4);             /* rkey */
	len = make_blob(b, RSHARE_KIND_MR, f, 40);
	CHECK(len == 84);
	CHECK_OK(rshare_blob_kind(b, len, &kind));
	CHECK(kind == RSHARE_KIND_MR);
	CHECK(field(b, len, RSHARE_FIELD_KIND) == RSHARE_KIND_MR);
	CHECK(field(b, len, RSHARE_FIELD_PROVIDER) == RSHARE_PROVIDER_SIM);
	CHECK(field(b, len, RSHARE_FIELD_GUID) == 0x02c0de5100000030ull);
	CHECK(field(b, len, RSHARE_FIELD_TABLE) == 0xabcd);
	CHECK(field(b, len, RSHARE_FIELD_HANDLE) == 7);
	CHECK(field(b, len, RSHARE_FIELD_SERIAL) == 42);
	CHECK(field(b, len, RSHARE_FIELD_PD_HANDLE) == 5);
	CHECK(field(b, len, RSHARE_FIELD_PD_SERIAL) == 9);
	CHECK(field(b, len, RSHARE_FIELD_ADDR) == 0x7f0000001000ull);
	CHECK(field(b, len, RSHARE_FIELD_LENGTH) == 8192);
	CHECK(field(b, len, RSHARE_FIELD_LKEY) == 0x1111);
	CHECK(field(b, len, RSHARE_FIELD_RKEY) == 0x2222);
	CHECK(field(b, len, RSHARE_FIELD_ACCESS) ==
	      (RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ));
	check_absent(b, len, (const int[]){ RSHARE_FIELD_PAGE_ID, RSHARE_FIELD_MMAP_OFF }, 2);
	CHECK_OK(rshare_blob_describe(b, len, json, sizeof(json), &n));
	CHECK(strstr(json, "\"kind\":\"mr\"") && strstr(json, "\"lkey\":4369") &&
	      strstr(json, "\"rkey\":8738") && strstr(json, "\"pd_handle\":5") &&
	      strstr(json, "\"length\":8192") && strstr(json, "\"addr\":\"0x00007f0000001000\""));
}

/* The 8 bytes of a crafted DM blob's fields: its length, 65536. */
static void dm_fields(unsigned char *f)
{
	put(f, 65536, 8);
}

/* A crafted DM blob: its length, nothing of an MR's. */
static void case_crafted_dm(void)
{
	unsigned char f[8], b[RSHARE_BLOB_MAX];
	char json[512];
	size_t len, n;

	dm_fields(f);
	len = make_blob(b, RSHARE_KIND_DM, f, 8);
	CHECK(len == 52);
	CHECK(field(b, len, RSHARE_FIELD_KIND) == RSHARE_KIND_DM);
	CHECK(field(b, len, RSHARE_FIELD_LENGTH) == 65536);
	check_absent(b, len, (const int[]){ RSHARE_FIELD_PAGE_ID, RSHARE_FIELD_MMAP_OFF,
					    RSHARE_FIELD_PD_HANDLE, RSHARE_FIELD_ADDR,
					    RSHARE_FIELD_LKEY, RSHARE_FIELD_RKEY,
					    RSHARE_FIELD_ACCESS, RSHARE_FIELD_PD_SERIAL }, 8);
	CHECK_OK(rshare_blob_describe(b, len, json, sizeof(json), &n));
	CHECK(strstr(json, "\"kind\":\"dm\"") && strstr(json, "\"length\":65536"));
}

/* An MR or DM blob with a private part is refused (P is 0 for them). */
static void case_private_part(void)
{
	unsigned char f[9], b[RSHARE_BLOB_MAX];
	size_t len;
	int kind;

	dm_fields(f);
	f[8] = 9; /* the private byte */
	len = make_blob(b, RSHARE_KIND_DM, f, 9);
	put(b + 10, 1, 2);
	put(b + len - 4, crc32c(b, len - 4), 4);
	CHECK_ST(rshare_blob_kind(b, len, &kind), RSHARE_E_BLOB_CORRUPT);
	CHECK_MSG("private part");
}

/* The forward rule: an intact blob of a kind this library does not know is
 * BLOB_KIND, everywhere a blob is read; damaged it is CORRUPT. */
static void case_unknown_kind(void)
{
	unsigned char f[8], b[RSHARE_BLOB_MAX];
	char json[512];
	size_t len, n;
	int kind;

	dm_fields(f);
	len = make_blob(b, 77, f, 8);
	CHECK_ST(rshare_blob_kind(b, len, &kind), RSHARE_E_BLOB_KIND);
	CHECK_MSG("kind 77 is unknown");
	CHECK_ST(rshare_blob_field(b, len, RSHARE_FIELD_KIND, &(uint64_t){ 0 }), RSHARE_E_BLOB_KIND);
	CHECK_ST(rshare_blob_describe(b, len, json, sizeof(json), &n), RSHARE_E_BLOB_KIND);
	CHECK_ST(rshare_blob_to_text(b, len, json, sizeof(json), &n), RSHARE_E_BLOB_KIND);
	b[len - 1] ^= 1;
	CHECK_ST(rshare_blob_kind(b, len, &kind), RSHARE_E_BLOB_CORRUPT);
}

/* Version: header and library agree. */
static void case_version(void)
{
	CHECK(rshare_version_number() == RSHARE_VERSION_NUMBER);
	CHECK(RSHARE_VERSION_NUMBER == RSHARE_VERSION_MAJOR * 10000 + RSHARE_VERSION_MINOR * 100 +
					       RSHARE_VERSION_PATCH);
}

/* The cases below: sim0, a PD and a VAR. */
static rshare_device *dev;
static rshare_pd *pd;
static rshare_var *var;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	REQUIRE_OK(rshare_var_alloc(dev, 0, &var));
}

static void teardown(void)
{
	CHECK_OK(rshare_var_free(var));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
}

/* Capabilities: sim0 has PDs and VARs, never native objects. */
static void case_caps(void)
{
	uint32_t caps = 0;

	CHECK_OK(rshare_device_caps(dev, &caps));
	CHECK((caps & (RSHARE_CAP_PD | RSHARE_CAP_VAR)) == (RSHARE_CAP_PD | RSHARE_CAP_VAR));
	CHECK(!(caps & RSHARE_CAP_NATIVE));
	CHECK(!(caps & ~(uint32_t)(RSHARE_CAP_PD | RSHARE_CAP_VAR | RSHARE_CAP_MR | RSHARE_CAP_DM |
				    RSHARE_CAP_BUF | RSHARE_CAP_DM_MAP)));
	CHECK_ST(rshare_device_caps(dev, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_device_caps(NULL, &caps), RSHARE_E_INVAL);
}

/* Native objects: UNSUPPORTED on sim0, out value untouched. */
static void case_native(void)
{
	uint32_t caps = 0;
	void *native = (void *)&caps;

	CHECK_ST(rshare_device_native(dev, &native), RSHARE_E_UNSUPPORTED);
	CHECK_MSG("sim0");
	CHECK_ST(rshare_pd_native(pd, &native), RSHARE_E_UNSUPPORTED);
	CHECK_ST(rshare_var_native(var, &native), RSHARE_E_UNSUPPORTED);
	CHECK(native == (void *)&caps);
	CHECK_ST(rshare_pd_native(pd, NULL), RSHARE_E_INVAL);
}

/* Scalar fields of real PD and VAR blobs. */
static void case_real_blobs(void)
{
	unsigned char pd_blob[RSHARE_BLOB_MAX], var_blob[RSHARE_BLOB_MAX];
	size_t pd_len = export_pd(pd, pd_blob), var_len = export_var(var, var_blob);
	uint32_t h = 99, page_id, vlen;
	uint64_t v, mmap_off;

	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK(field(pd_blob, pd_len, RSHARE_FIELD_HANDLE) == h);
	CHECK(field(pd_blob, pd_len, RSHARE_FIELD_KIND) == RSHARE_KIND_PD);
	CHECK(field(pd_blob, pd_len, RSHARE_FIELD_SERIAL) > 0);
	CHECK_OK(rshare_device_guid(dev, &v));
	CHECK(field(pd_blob, pd_len, RSHARE_FIELD_GUID) == v);
	CHECK(field(pd_blob, pd_len, RSHARE_FIELD_TABLE) != 0);
	/* sim0 blobs carry no ledger serial (since 1.2's field). */
	check_absent(pd_blob, pd_len, (const int[]){ RSHARE_FIELD_PAGE_ID, RSHARE_FIELD_LENGTH,
						     RSHARE_FIELD_MMAP_OFF, RSHARE_FIELD_LKEY,
						     RSHARE_FIELD_ADDR, RSHARE_FIELD_LEDGER }, 6);
	CHECK_OK(rshare_var_handle(var, &h));
	CHECK(field(var_blob, var_len, RSHARE_FIELD_HANDLE) == h);
	CHECK_OK(rshare_var_attrs(var, &page_id, &vlen, &mmap_off));
	CHECK(field(var_blob, var_len, RSHARE_FIELD_PAGE_ID) == page_id);
	CHECK(field(var_blob, var_len, RSHARE_FIELD_LENGTH) == vlen);
	CHECK(field(var_blob, var_len, RSHARE_FIELD_MMAP_OFF) == mmap_off);
	check_absent(var_blob, var_len, (const int[]){ RSHARE_FIELD_PD_HANDLE, RSHARE_FIELD_RKEY }, 2);
}

/* Misuse: bad field numbers and arguments; nothing written on failure. */
static void case_misuse(void)
{
	unsigned char pd_blob[RSHARE_BLOB_MAX];
	size_t pd_len = export_pd(pd, pd_blob);
	uint32_t h = 99;
	uint64_t v = 77;

	CHECK_ST(rshare_blob_field(pd_blob, pd_len, 0, &v), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_field(pd_blob, pd_len, RSHARE_FIELD_LEDGER + 1, &v), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_field(pd_blob, pd_len, -1, &v), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_field(pd_blob, pd_len, RSHARE_FIELD_KIND, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_field(NULL, pd_len, RSHARE_FIELD_KIND, &v), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_field(pd_blob, pd_len - 1, RSHARE_FIELD_KIND, &v),
		 RSHARE_E_BLOB_CORRUPT);
	CHECK(v == 77);
	CHECK_ST(rshare_var_handle(var, NULL), RSHARE_E_INVAL);
	CHECK_ST(rshare_var_handle((rshare_var *)pd, &h), RSHARE_E_STALE);
}

/* A freed VAR and a closed device are stale for the 1.1 calls. */
static void case_stale(void)
{
	rshare_device *gone;
	rshare_var *freed;
	uint32_t caps = 0, h = 99;
	void *native = (void *)&caps;

	REQUIRE_OK(rshare_var_alloc(dev, 0, &freed));
	CHECK_OK(rshare_var_free(freed));
	CHECK_ST(rshare_var_handle(freed, &h), RSHARE_E_STALE);
	CHECK_ST(rshare_var_native(freed, &native), RSHARE_E_STALE);
	REQUIRE_OK(rshare_device_open("sim0", &gone));
	CHECK_OK(rshare_device_close(gone));
	CHECK_ST(rshare_device_caps(gone, &caps), RSHARE_E_STALE);
}

#define T_PROGRAM_test_fields ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
