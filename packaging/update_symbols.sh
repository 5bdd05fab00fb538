#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Write debian/librshare1.symbols (Debian's list of the library's exports)
# from a built librshare.so.1, with dpkg-gensymbols: every exported symbol
# at the version of its node in abi/rshare.map (name@RSHARE_1.1 -> 1.1), so
# a program using a 1.1 function depends on librshare1 (>= 1.1).
#
#   packaging/update_symbols.sh [LIBRARY [OUTPUT]]
#
# LIBRARY defaults to build/lib/librshare.so.1, OUTPUT to
# debian/librshare1.symbols. Run it after adding a function to the ABI
# (abi/README.md, "Adding a function"); the Debian build
# (DPKG_GENSYMBOLS_CHECK_LEVEL=4) and the test packaging_debian_symbols fail
# while the file and the library disagree.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
lib=$(realpath "${1:-$src/build/lib/librshare.so.1}")
out=${2:-$src/debian/librshare1.symbols}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# dpkg-gensymbols reads debian/control: run it in the source tree.
(cd "$src" && dpkg-gensymbols -q -plibrshare1 -v0 -e"$lib" -O"$tmp")
if ! grep -q '@RSHARE_' "$tmp"; then
	echo "update_symbols: no versioned symbols in $lib" >&2
	exit 1
fi
{
	echo "librshare.so.1 librshare1 #MINVER#"
	echo "* Build-Depends-Package: librshare-dev"
	sed -n 's/^ \([^ @]*@RSHARE_\([0-9.]*\)\) .*/ \1 \2/p' "$tmp"
} >"$out"
