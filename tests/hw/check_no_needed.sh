#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# librshare must load on hosts without rdma-core: no DT_NEEDED entry may
# name libibverbs or libmlx5 (they are dlopen()ed at run time).
#   check_no_needed.sh path/to/librshare.so.1
set -u
lib=$1
needed=$(readelf -d "$lib" | grep '(NEEDED)') || {
	echo "FAIL: readelf -d $lib shows no NEEDED entry at all (is it a shared library?)"
	exit 1
}
echo "$needed"
if echo "$needed" | grep -Eq 'libibverbs|libmlx5'; then
	echo "FAIL: $lib links rdma-core at load time"
	exit 1
fi
echo "ok: no DT_NEEDED on libibverbs or libmlx5"
