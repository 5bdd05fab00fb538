#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Regenerate the ABI baseline abi/librshare.so.1.abi from a built library.
#
#   abi/tools/update_baseline.sh BUILD_DIR/lib/librshare.so.1
#
# Only for an intended, compatible ABI change (a new RSHARE_1.x node): commit
# the new baseline in the same commit as the change, saying why (abi/README.md).
# Only exported interfaces count, and the output is independent of the
# checkout and build directories: no corpus path, no compilation dir, no
# source locations, no DT_NEEDED, hashed type ids, and translation-unit paths
# relative to the source tree.
set -eu
lib=${1:?usage: abi/tools/update_baseline.sh BUILD_DIR/lib/librshare.so.1}
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/abi/librshare.so.1.abi

if ! readelf -S "$lib" | grep -q '\.debug_info'; then
	echo "update_baseline: $lib has no debug info; build with -g (RelWithDebInfo)" >&2
	exit 1
fi
abidw --headers-dir "$top/capi/include/rshare" --drop-private-types \
	--exported-interfaces-only --drop-undefined-syms --no-corpus-path \
	--no-comp-dir-path --no-show-locs --no-elf-needed \
	--type-id-style hash --out-file "$out.tmp" "$lib"
sed "s|path='$top/|path='|" "$out.tmp" > "$out"
rm -f "$out.tmp"
echo "wrote $out; review it with git diff and commit it with the ABI change"
