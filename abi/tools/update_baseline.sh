#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Write the ABI baseline of the newest version node from a built library:
#
#   abi/tools/update_baseline.sh BUILD_DIR/lib/librshare.so.1 [OUT_DIR]
#
# The file is OUT_DIR/<node>.abi (OUT_DIR defaults to abi/baselines), <node>
# being the last node of the map, e.g. abi/baselines/RSHARE_1.1.abi. The map
# and header are those of the tree OUT_DIR is in (OUT_DIR/../..: a copy made
# by tests/abi/gate_tree.py), else this tree's. Baselines of older nodes are
# never rewritten: they are what the gate checks additions-only against.
# Only for an intended, compatible ABI change (a new RSHARE_1.x node): commit
# the new baseline in the same commit as the change, saying why (abi/README.md).
# Only exported interfaces count, and the output is independent of the
# checkout and build directories: no corpus path, no compilation dir, no
# source locations, no DT_NEEDED, hashed type ids, and translation-unit paths
# relative to the source tree.
set -eu
lib=${1:?usage: abi/tools/update_baseline.sh BUILD_DIR/lib/librshare.so.1 [OUT_DIR]}
top=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${2:-$top/abi/baselines}
mkdir -p "$outdir"
src=$top
if [ -f "$outdir/../rshare.map" ] && [ -f "$outdir/../../capi/include/rshare/rshare.h" ]; then
	src=$(cd "$outdir/../.." && pwd)
fi
map=$src/abi/rshare.map
node=$(sed -n 's/^\(RSHARE_[0-9][0-9.]*\) *{.*/\1/p' "$map" | tail -n 1)
if [ -z "$node" ]; then
	echo "update_baseline: no version node in $map" >&2
	exit 1
fi
out=$outdir/$node.abi

if ! readelf -S "$lib" | grep -q '\.debug_info'; then
	echo "update_baseline: $lib has no debug info; build with -g (RelWithDebInfo)" >&2
	exit 1
fi
abidw --headers-dir "$src/capi/include/rshare" --drop-private-types \
	--exported-interfaces-only --drop-undefined-syms --no-corpus-path \
	--no-comp-dir-path --no-show-locs --no-elf-needed \
	--type-id-style hash --out-file "$out.tmp" "$lib"
sed "s|path='[^']*/capi/|path='capi/|" "$out.tmp" > "$out"
rm -f "$out.tmp"
echo "wrote $out (the $node baseline); review it with git diff and commit it with the ABI change"
