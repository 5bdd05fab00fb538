#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The installed manual: install the dev and bin components into a temporary
# prefix, then
#   - man renders every page (aliases included) without a groff warning;
#   - every function the library exports has a page: `man 3 NAME` shows it;
#   - rshare(1) covers every subcommand `rshare --help` lists, and its options.
# usage: man_test.sh BUILD_DIR LIBRARY RSHARE
set -eu
build=$1 lib=$2 rshare=$3
tmp=$(mktemp -d /tmp/rshare-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export MANPAGER=cat PAGER=cat MANWIDTH=100 LC_ALL=C.UTF-8
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

for c in dev bin; do
	cmake --install "$build" --prefix "$tmp/p" --component $c >/dev/null
done
mandir=$(dirname "$(find "$tmp/p" -type d -name man3)")
[ -d "$mandir/man1" ] && [ -d "$mandir/man3" ] || { echo "FAIL: no man1/man3 installed" >&2; exit 1; }

# Every page renders, quietly (man-db resolves .so aliases from the man root).
n=0
for page in "$mandir"/man1/* "$mandir"/man3/*; do
	rel=${page#"$mandir"/}
	(cd "$mandir" && man --warnings=w -l "$rel" >"$tmp/out" 2>"$tmp/err") || fail "man -l $rel: exit $?"
	[ -s "$tmp/err" ] && fail "man -l $rel: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] || fail "man -l $rel: empty"
	n=$((n + 1))
done

# Every exported function has a page that documents it.
fns=$(nm -D --defined-only "$lib" | sed -n 's/.* T \(rshare_[a-z0-9_]*\)@.*/\1/p' | sort -u)
[ -n "$fns" ] || fail "no exported function found in $lib"
for fn in $fns; do
	if ! man -M "$mandir" 3 "$fn" >"$tmp/out" 2>"$tmp/err"; then
		fail "man 3 $fn: no page (add a doc comment in rshare.h and rebuild)"
		continue
	fi
	grep -q "^ *$fn()" "$tmp/out" || fail "man 3 $fn: the page lacks a section for $fn"
done

# rshare(1) covers every subcommand and its options.
man -M "$mandir" 1 rshare >"$tmp/rshare.1.txt" 2>&1 || fail "man 1 rshare"
for cmd in $("$rshare" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p'); do
	grep -q "^ *rshare $cmd" "$tmp/rshare.1.txt" || fail "rshare(1) lacks 'rshare $cmd'"
	for opt in $("$rshare" "$cmd" --help | sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p'); do
		[ "$opt" = --help ] && continue
		grep -q -- "$opt" "$tmp/rshare.1.txt" || fail "rshare(1) lacks $cmd $opt"
	done
done

[ $failed = 0 ] && echo "man test: $n pages render cleanly, $(echo "$fns" | wc -l) functions documented"
exit $failed
