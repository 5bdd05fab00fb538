#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Write debian/librshare1.symbols (Debian's list of the library's exports)
# from a built librshare.so.1, with dpkg-gensymbols: every exported symbol
# at its version node, with that node's version as the package version it
# needs (name@RSHARE_1.1 -> 1.1), so a program using a 1.1 function depends
# on librshare1 (>= 1.1). A node newer than the package (debian/changelog:
# RSHARE_1.2 symbols in a 1.1.0 tree) gets the package's version instead,
# the first package that has it: librshare1 (>= 1.2) could not be met.
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
# dpkg-gensymbols reads debian/control: run it in the source tree. -c0 (and
# no DPKG_GENSYMBOLS_CHECK_LEVEL, which would override it): this
# writes the file (the package build exports DPKG_GENSYMBOLS_CHECK_LEVEL=4).
(cd "$src" && env -u DPKG_GENSYMBOLS_CHECK_LEVEL dpkg-gensymbols -q -c0 -plibrshare1 -v0 -e"$lib" -O"$tmp")
if ! grep -q '@RSHARE_' "$tmp"; then
	echo "update_symbols: no versioned symbols in $lib" >&2
	exit 1
fi
package=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
package=${package%-*}
{
	echo "librshare.so.1 librshare1 #MINVER#"
	echo "* Build-Depends-Package: librshare-dev"
	sed -n 's/^ \([^ @]*@RSHARE_\([0-9.]*\)\) .*/\1 \2/p' "$tmp" | while read -r symbol node; do
		if dpkg --compare-versions "$node" gt "$package"; then node=$package; fi
		echo " $symbol $node"
	done
} >"$out"
