/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Library-level calls: version, the status table, thread-local diagnostics. */
#include <pthread.h>

#include "harness.h"

static void *other_thread(void *arg)
{
	(void)arg;
	/* A fresh thread has no failure of its own. */
	CHECK(strcmp(rshare_last_error(), "") == 0);
	CHECK(rshare_last_errno() == 0);
	return NULL;
}

/* The version: header, library and enum agree. */
static void case_version(void)
{
	CHECK(strcmp(rshare_version(), "1.2.0") == 0);
	CHECK(RSHARE_VERSION_MAJOR == 1 && RSHARE_VERSION_MINOR == 2 && RSHARE_VERSION_PATCH == 0);
	/* The header's number and the library's agree (the SQLite-style check a
	 * program makes at start-up), and the enum member mirrors the macro. */
	CHECK(RSHARE_VERSION_NUMBER == 10200);
	CHECK(rshare_version_number() == RSHARE_VERSION_NUMBER);
	CHECK(RSHARE_HEADER_VERSION == RSHARE_VERSION_NUMBER);
}

/* The status table: frozen names and codes, texts, unknown values. */
static void case_statuses(void)
{
	static const struct { int code; const char *name; } frozen[] = {
		{ 0, "RSHARE_OK" }, { -1, "RSHARE_E_INVAL" }, { -2, "RSHARE_E_NOMEM" },
		{ -3, "RSHARE_E_NODEV" }, { -4, "RSHARE_E_UNSUPPORTED" },
		{ -5, "RSHARE_E_STALE" }, { -6, "RSHARE_E_BUSY" }, { -7, "RSHARE_E_NOSPACE" },
		{ -8, "RSHARE_E_BLOB_CORRUPT" }, { -9, "RSHARE_E_BLOB_VERSION" },
		{ -10, "RSHARE_E_BLOB_KIND" }, { -11, "RSHARE_E_DEVICE_MISMATCH" },
		{ -12, "RSHARE_E_NOT_FOUND" }, { -13, "RSHARE_E_PERM" }, { -14, "RSHARE_E_IO" },
		{ -15, "RSHARE_E_PROTOCOL" }, { -16, "RSHARE_E_AGAIN" },
	};

	for (size_t i = 0; i < sizeof(frozen) / sizeof(frozen[0]); i++) {
		CHECK(strcmp(rshare_status_name(frozen[i].code), frozen[i].name) == 0);
		CHECK(strlen(rshare_strerror(frozen[i].code)) > 3);
	}
	CHECK(RSHARE_E_STALE == -5 && RSHARE_E_PROTOCOL == -15);
	CHECK(strcmp(rshare_status_name(1), "RSHARE_E_UNKNOWN") == 0);
	CHECK(RSHARE_E_AGAIN == -16);
	CHECK(strcmp(rshare_status_name(-64), "RSHARE_E_UNKNOWN") == 0);
	CHECK(strcmp(rshare_status_name(-2147483647 - 1), "RSHARE_E_UNKNOWN") == 0);
	CHECK(strlen(rshare_strerror(12345)) > 0);
	/* The texts are the header's enum comments (capi/status_list.cmake);
	 * RSHARE_E_PROTOCOL is the broker's too, not only the channel's. */
	CHECK(strcmp(rshare_strerror(RSHARE_E_PROTOCOL),
		     "malformed message from a channel or broker peer") == 0);
	CHECK(strcmp(rshare_strerror(RSHARE_E_PERM), "permission denied") == 0);
	/* Each text is distinct: no copy-paste in the table. */
	for (int a = 0; a >= -16; a--)
		for (int b = a - 1; b >= -16; b--)
			CHECK(strcmp(rshare_strerror(a), rshare_strerror(b)) != 0);
}

/* The last error: empty until a call fails, then naming the function, the
 * cause and an OS failure's errno; success does not clear it (as errno).
 * The cases before this one fail no call. */
static void case_last_error(void)
{
	rshare_device *dev;
	size_t n;

	CHECK(strcmp(rshare_last_error(), "") == 0);
	CHECK_ST(rshare_devices_count(NULL), RSHARE_E_INVAL);
	/* The message names the function and the cause. */
	CHECK(strstr(rshare_last_error(), "rshare_devices_count") != NULL);
	CHECK(strstr(rshare_last_error(), "count is NULL") != NULL);
	CHECK(rshare_last_errno() == 0);

	/* An OS failure keeps its errno: dup of a closed fd. */
	CHECK_ST(rshare_device_import(1000, &dev), RSHARE_E_INVAL);
	CHECK(rshare_last_errno() == 9 /* EBADF */);
	CHECK(strstr(rshare_last_error(), "Bad file descriptor") != NULL);
	/* Success does not clear the last failure (as errno). */
	CHECK_OK(rshare_devices_count(&n));
	CHECK(strstr(rshare_last_error(), "rshare_device_import") != NULL);
}

/* Diagnostics are per thread: a fresh thread has none of this one's. */
static void case_thread_local(void)
{
	pthread_t th;
	rshare_device *dev;

	CHECK_ST(rshare_device_import(1000, &dev), RSHARE_E_INVAL);
	REQUIRE(pthread_create(&th, NULL, other_thread, NULL) == 0);
	pthread_join(th, NULL);
	CHECK(rshare_last_errno() == 9 /* EBADF */);
}

#define T_PROGRAM_test_library ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(NULL, NULL)
