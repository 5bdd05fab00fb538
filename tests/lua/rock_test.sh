#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The rock, as a Lua user installs it (rshare-scm-1.rockspec):
#   - a Lua 5.1 tree is refused up front (`luarocks --lua-version=5.1 make`
#     fails on the dependency, before anything is built);
#   - a source rock of the tree (packaging/make_src_rock.sh) installs into
#     a fresh Lua 5.4 tree from outside the tree, offline;
#   - the tree's bin/ then holds the rshare command and nothing else, and
#     it runs; lua5.4 with `luarocks path` requires "rshare", which maps the
#     rock's own librshare.so.1 (tests/lua/installed_check.lua);
#   - `luarocks remove` takes the command off bin/ again.
# usage: rock_test.sh SOURCE_DIR LUA54 LUAROCKS
set -eu
src=$1 lua54=$2 luarocks=$3
tmp=$(mktemp -d /tmp/rshare-rock.XXXXXX)
tmp=$(realpath "$tmp")
trap 'rm -rf "$tmp"' EXIT
unset LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4 LD_LIBRARY_PATH LD_PRELOAD
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# Lua 5.1: refused on the dependency, in a copy of the tree (make builds in place).
mkdir "$tmp/copy"
(cd "$src" && git ls-files -co --exclude-standard -z |
	xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh | tar --null -T - -cf -) |
	tar -xf - -C "$tmp/copy"
if (cd "$tmp/copy" && "$luarocks" --lua-version=5.1 make --tree "$tmp/t51") >"$tmp/51.log" 2>&1; then
	fail "luarocks --lua-version=5.1 make succeeded"
fi
grep -q 'lua >= 5.4' "$tmp/51.log" || { cat "$tmp/51.log" >&2; fail "the 5.1 refusal does not name the Lua dependency"; }
[ -e "$tmp/copy/build.luarocks" ] && fail "luarocks built something for Lua 5.1 before refusing"

# Lua 5.4: a source rock, installed from outside the tree.
rock=$("$src/packaging/make_src_rock.sh" "$tmp")
cd "$tmp"
if ! "$luarocks" --lua-version=5.4 install --tree "$tmp/tree" "$rock" >"$tmp/54.log" 2>&1; then
	tail -40 "$tmp/54.log" >&2
	fail "luarocks --lua-version=5.4 install $rock"
	exit 1
fi
on_path=$(ls "$tmp/tree/bin")
[ "$on_path" = rshare ] || fail "the rock puts on PATH: $(echo $on_path)"
"$tmp/tree/bin/rshare" devices | grep -q sim0 || fail "the rock's rshare command does not run"
paths=$("$luarocks" --lua-version=5.4 path --tree "$tmp/tree")
(eval "$paths" && "$lua54" "$src/tests/lua/installed_check.lua" "$tmp/tree") ||
	fail "lua5.4 require 'rshare' from the rock"
"$luarocks" --lua-version=5.4 remove --tree "$tmp/tree" rshare >/dev/null 2>&1 || fail "luarocks remove"
[ -e "$tmp/tree/bin/rshare" ] && fail "luarocks remove left bin/rshare"

[ $failed = 0 ] && echo "rock test: all checks passed"
exit $failed
