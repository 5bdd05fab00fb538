#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# debian/librshare1.symbols against the built library, without a package
# build: it must be exactly what packaging/update_symbols.sh writes (every
# export at its node's version), and dpkg-gensymbols at check level 4, as
# the Debian build runs it (debian/rules), must accept it, and refuse it
# once a symbol is missing from it (the check can fail). debian/changelog
# must carry the library's version.
# usage: symbols_test.sh LIBRARY SOURCE_DIR VERSION
set -eu
lib=$1 src=$2 version=$3
tmp=$(mktemp -d /tmp/rshare-symbols.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
refresh="refresh it with: packaging/update_symbols.sh $lib (docs/packaging.md)"

"$src/packaging/update_symbols.sh" "$lib" "$tmp/expected"
diff -u "$src/debian/librshare1.symbols" "$tmp/expected" ||
	fail "debian/librshare1.symbols is not the library's exports: $refresh"

gensymbols() { (cd "$src" && DPKG_GENSYMBOLS_CHECK_LEVEL=4 dpkg-gensymbols -q -c4 -plibrshare1 -v"$version" -e"$lib" -I"$1" -O"$tmp/out"); }
gensymbols "$src/debian/librshare1.symbols" >"$tmp/check.log" 2>&1 ||
	{ cat "$tmp/check.log" >&2; fail "dpkg-gensymbols -c4 refuses debian/librshare1.symbols: $refresh"; }
# A new export (here: one left out of the file) fails the check.
grep -v ' rshare_pd_alloc@' "$src/debian/librshare1.symbols" >"$tmp/short"
gensymbols "$tmp/short" >/dev/null 2>&1 && fail "dpkg-gensymbols -c4 accepts a symbols file missing an export"

changelog=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[ "$changelog" = "$version" ] ||
	fail "debian/changelog is at $changelog, the library at $version: add a changelog entry (dch -v $version)"

[ $failed = 0 ] && echo "symbols test: debian/librshare1.symbols matches $lib"
exit $failed
