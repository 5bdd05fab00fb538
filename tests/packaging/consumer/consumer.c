/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* A program built against an installed rshare, as a user would build it
 * (with pkg-config, or with find_package(rshare) in CMake): it uses the
 * header and the library and checks what it gets back. */
#include <stdio.h>
#include <string.h>

#include <rshare/rshare.h>

int main(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_pd *pd, *again;
	size_t len;
	int kind;

	if (strncmp(rshare_version(), "1.", 2) != 0 || rshare_device_open("sim0", &dev) ||
	    rshare_pd_alloc(dev, &pd) || rshare_pd_export(pd, blob, sizeof(blob), &len) ||
	    rshare_blob_kind(blob, len, &kind) || kind != RSHARE_KIND_PD ||
	    rshare_pd_import(dev, blob, len, &again) || rshare_pd_unimport(again) ||
	    rshare_pd_free(pd) || rshare_device_close(dev)) {
		fprintf(stderr, "consumer: %s\n", rshare_last_error());
		return 1;
	}
	printf("consumer: rshare %s, shared a PD through a %zu-byte blob\n", rshare_version(),
	       len);
	return 0;
}
