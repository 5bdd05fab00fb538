/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The numbers of the C ABI that may never change: status codes, enum values,
 * limits and the major version. The literals below are the 1.0 values, typed
 * in by hand; the test compares them with what the compiler sees in
 * rshare.h, so a renumbering fails here with a message naming the constant.
 * New constants may be added (append them here); existing lines never change.
 */
#include <stdio.h>

#include <rshare/rshare.h>

struct frozen {
	const char *name;
	long long compiled; /* the value in rshare.h */
	long long frozen;   /* the value released in 1.0 */
	size_t size;        /* sizeof the enum type: int in the C ABI */
};

#define FROZEN(type, name, value) { #name, (long long)(name), (value), sizeof(type) }

static const struct frozen table[] = {
	FROZEN(enum rshare_status, RSHARE_OK, 0),
	FROZEN(enum rshare_status, RSHARE_E_INVAL, -1),
	FROZEN(enum rshare_status, RSHARE_E_NOMEM, -2),
	FROZEN(enum rshare_status, RSHARE_E_NODEV, -3),
	FROZEN(enum rshare_status, RSHARE_E_UNSUPPORTED, -4),
	FROZEN(enum rshare_status, RSHARE_E_STALE, -5),
	FROZEN(enum rshare_status, RSHARE_E_BUSY, -6),
	FROZEN(enum rshare_status, RSHARE_E_NOSPACE, -7),
	FROZEN(enum rshare_status, RSHARE_E_BLOB_CORRUPT, -8),
	FROZEN(enum rshare_status, RSHARE_E_BLOB_VERSION, -9),
	FROZEN(enum rshare_status, RSHARE_E_BLOB_KIND, -10),
	FROZEN(enum rshare_status, RSHARE_E_DEVICE_MISMATCH, -11),
	FROZEN(enum rshare_status, RSHARE_E_NOT_FOUND, -12),
	FROZEN(enum rshare_status, RSHARE_E_PERM, -13),
	FROZEN(enum rshare_status, RSHARE_E_IO, -14),
	FROZEN(enum rshare_status, RSHARE_E_PROTOCOL, -15),
	FROZEN(enum rshare_status, RSHARE_E_AGAIN, -16), /* since 1.2 */
	FROZEN(enum rshare_provider, RSHARE_PROVIDER_HW, 1),
	FROZEN(enum rshare_provider, RSHARE_PROVIDER_SIM, 2),
	FROZEN(enum rshare_kind, RSHARE_KIND_PD, 1),
	FROZEN(enum rshare_kind, RSHARE_KIND_VAR, 2),
	FROZEN(enum rshare_limits, RSHARE_BLOB_MAX, 128),
	FROZEN(enum rshare_limits, RSHARE_TEXT_MAX, 180),
	FROZEN(enum rshare_limits, RSHARE_NAME_MAX, 64),
	FROZEN(enum rshare_limits, RSHARE_PAYLOAD_MAX, 65536),
	FROZEN(enum rshare_share_limits, RSHARE_SHARE_NAME_MAX, 255),
	FROZEN(enum rshare_share_limits, RSHARE_SHARE_IDS_MAX, 64),
	FROZEN(enum rshare_publish_flags, RSHARE_PUBLISH_PERSISTENT, 1),
	FROZEN(enum rshare_var_flags, RSHARE_VAR_FLAG_TLP, 1),
	/* Since 1.1 (RSHARE_HEADER_VERSION is not here: it follows the header's
	 * version, like RSHARE_VERSION_MINOR). */
	FROZEN(enum rshare_kind, RSHARE_KIND_MR, 3),
	FROZEN(enum rshare_kind, RSHARE_KIND_DM, 4),
	FROZEN(enum rshare_access, RSHARE_ACCESS_LOCAL_WRITE, 1),
	FROZEN(enum rshare_access, RSHARE_ACCESS_REMOTE_WRITE, 2),
	FROZEN(enum rshare_access, RSHARE_ACCESS_REMOTE_READ, 4),
	FROZEN(enum rshare_access, RSHARE_ACCESS_REMOTE_ATOMIC, 8),
	FROZEN(enum rshare_caps, RSHARE_CAP_PD, 1),
	FROZEN(enum rshare_caps, RSHARE_CAP_VAR, 2),
	FROZEN(enum rshare_caps, RSHARE_CAP_MR, 4),
	FROZEN(enum rshare_caps, RSHARE_CAP_DM, 8),
	FROZEN(enum rshare_caps, RSHARE_CAP_NATIVE, 16),
	FROZEN(enum rshare_caps, RSHARE_CAP_LEDGER, 32),
	FROZEN(enum rshare_field, RSHARE_FIELD_KIND, 1),
	FROZEN(enum rshare_field, RSHARE_FIELD_PROVIDER, 2),
	FROZEN(enum rshare_field, RSHARE_FIELD_GUID, 3),
	FROZEN(enum rshare_field, RSHARE_FIELD_TABLE, 4),
	FROZEN(enum rshare_field, RSHARE_FIELD_HANDLE, 5),
	FROZEN(enum rshare_field, RSHARE_FIELD_SERIAL, 6),
	FROZEN(enum rshare_field, RSHARE_FIELD_PAGE_ID, 7),
	FROZEN(enum rshare_field, RSHARE_FIELD_LENGTH, 8),
	FROZEN(enum rshare_field, RSHARE_FIELD_MMAP_OFF, 9),
	FROZEN(enum rshare_field, RSHARE_FIELD_PD_HANDLE, 10),
	FROZEN(enum rshare_field, RSHARE_FIELD_PD_SERIAL, 11),
	FROZEN(enum rshare_field, RSHARE_FIELD_ADDR, 12),
	FROZEN(enum rshare_field, RSHARE_FIELD_LKEY, 13),
	FROZEN(enum rshare_field, RSHARE_FIELD_RKEY, 14),
	FROZEN(enum rshare_field, RSHARE_FIELD_ACCESS, 15),
	/* Since 1.2: shared buffers (issue 20). */
	FROZEN(enum rshare_status, RSHARE_E_FD_MISMATCH, -19),
	FROZEN(enum rshare_kind, RSHARE_KIND_BUF, 5),
	FROZEN(enum rshare_limits, RSHARE_CHANNEL_FDS_MAX, 8),
	FROZEN(enum rshare_caps, RSHARE_CAP_BUF, 64),
	FROZEN(enum rshare_caps, RSHARE_CAP_DM_MAP, 128),
	FROZEN(enum rshare_field, RSHARE_FIELD_MEM_DEV, 16),
	FROZEN(enum rshare_field, RSHARE_FIELD_MEM_INO, 17),
	FROZEN(enum rshare_field, RSHARE_FIELD_LEDGER, 18),
	/* The major version is the SONAME's: librshare.so.1. */
	FROZEN(int, RSHARE_VERSION_MAJOR, 1),
};

int main(void)
{
	int failures = 0;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct frozen *f = &table[i];

		if (f->compiled != f->frozen) {
			printf("FAIL: %s is %lld in rshare.h, frozen at %lld\n", f->name,
			       f->compiled, f->frozen);
			failures++;
		}
		if (f->size != sizeof(int)) {
			printf("FAIL: %s: its enum is %zu bytes, the ABI needs int-sized enums\n",
			       f->name, f->size);
			failures++;
		}
	}
	if (failures)
		return 1;
	printf("OK: %zu frozen values match rshare.h\n", sizeof(table) / sizeof(table[0]));
	return 0;
}
