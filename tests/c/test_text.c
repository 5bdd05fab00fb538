/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The text form: round trips, the NOSPACE convention and bad text. */
#include "harness.h"

/* Every case: sim0, a PD and a VAR. */
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

/* The text form of blob: round trip, NOSPACE, pasted and damaged text. */
static void round_trip(const unsigned char *blob, size_t len)
{
	unsigned char back[RSHARE_BLOB_MAX];
	char text[RSHARE_TEXT_MAX], bad[RSHARE_TEXT_MAX + 300];
	size_t tlen, blen;

		CHECK_ST(rshare_blob_to_text(blob, len, NULL, 0, &tlen), RSHARE_E_NOSPACE);
	CHECK(tlen == 7 + (len * 4 + 2) / 3);
	CHECK_ST(rshare_blob_to_text(blob, len, text, tlen, &tlen), RSHARE_E_NOSPACE);
	CHECK_OK(rshare_blob_to_text(blob, len, text, tlen + 1, &tlen));
	CHECK(strncmp(text, "rshare:", 7) == 0 && strlen(text) == tlen);
	CHECK(tlen < RSHARE_TEXT_MAX);
	/* Only characters that need no quoting anywhere. */
	CHECK(strspn(text + 7, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			       "0123456789-_") == tlen - 7);
	CHECK_OK(rshare_blob_from_text(text, back, sizeof(back), &blen));
	CHECK(blen == len && memcmp(back, blob, len) == 0);
	CHECK_ST(rshare_blob_from_text(text, NULL, 0, &blen), RSHARE_E_NOSPACE);
	CHECK(blen == len);
	CHECK_ST(rshare_blob_from_text(text, back, len - 1, &blen), RSHARE_E_NOSPACE);
	/* A pasted value with its newline is accepted. */
	snprintf(bad, sizeof(bad), "%s\n", text);
	CHECK_OK(rshare_blob_from_text(bad, back, sizeof(back), &blen));
	/* Truncated text: impossible length, or a blob that fails. */
	for (size_t cut = 7; cut < tlen; cut++) {
		int st;
		memcpy(bad, text, cut);
		bad[cut] = '\0';
		st = rshare_blob_from_text(bad, back, sizeof(back), &blen);
		CHECK(st == RSHARE_E_INVAL || st == RSHARE_E_BLOB_CORRUPT);
	}
	/* Every character replaced by another valid one is caught. */
	for (size_t i = 7; i < tlen; i++) {
		int st;
		memcpy(bad, text, tlen + 1);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		st = rshare_blob_from_text(bad, back, sizeof(back), &blen);
		CHECK(st == RSHARE_E_INVAL || st == RSHARE_E_BLOB_CORRUPT ||
		      st == RSHARE_E_BLOB_VERSION);
	}
}

static void case_pd_round_trip(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];

	round_trip(blob, export_pd(pd, blob));
}

static void case_var_round_trip(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];

	round_trip(blob, export_var(var, blob));
}

/* Bad text, and to_text of what is not a blob. */
static void case_refusals(void)
{
	unsigned char blob[RSHARE_BLOB_MAX], back[RSHARE_BLOB_MAX];
	char text[RSHARE_TEXT_MAX], bad[RSHARE_TEXT_MAX + 300];
	size_t len = export_var(var, blob), tlen, blen;

	CHECK_ST(rshare_blob_from_text(NULL, back, sizeof(back), &blen), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_from_text("", back, sizeof(back), &blen), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_from_text("rshare", back, sizeof(back), &blen), RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_from_text("RSHARE:AAAA", back, sizeof(back), &blen),
		 RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_from_text("rshare:", back, sizeof(back), &blen),
		 RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(rshare_blob_from_text("rshare:AAA=", back, sizeof(back), &blen),
		 RSHARE_E_INVAL);
	CHECK(strstr(rshare_last_error(), "offset 10") != NULL);
	CHECK_ST(rshare_blob_from_text("rshare:AA+A", back, sizeof(back), &blen),
		 RSHARE_E_INVAL);
	CHECK_ST(rshare_blob_from_text("rshare:A", back, sizeof(back), &blen), RSHARE_E_INVAL);
	memset(bad, 'A', sizeof(bad));
	memcpy(bad, "rshare:", 7);
	bad[sizeof(bad) - 1] = '\0';
	CHECK_ST(rshare_blob_from_text(bad, back, sizeof(back), &blen), RSHARE_E_BLOB_CORRUPT);
	CHECK(strstr(rshare_last_error(), "more than") != NULL);
	/* to_text refuses what is not a blob. */
	CHECK_ST(rshare_blob_to_text("nope", 4, text, sizeof(text), &tlen),
		 RSHARE_E_BLOB_CORRUPT);
	CHECK_ST(rshare_blob_to_text(blob, len, text, sizeof(text), NULL), RSHARE_E_INVAL);
}

#define T_PROGRAM_test_text ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)
