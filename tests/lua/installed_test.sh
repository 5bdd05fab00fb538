#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The installed Lua modules, used as Lua users would: `cmake --install` of
# the lib and lua components into a temporary prefix (outside the system
# directories), then lua5.4 and luajit with LUA_PATH/LUA_CPATH reaching
# only that prefix and no LD_LIBRARY_PATH: rshare/core.so finds the library
# by its RUNPATH, rshare.ffi by its installed rshare/libpath.lua, relative to
# itself. Then the prefix is moved as a whole, and both still work.
# usage: installed_test.sh BUILD_DIR CHECK_SCRIPT LUA54 LUAJIT
set -eu
build=$1 check=$2 lua54=$3 luajit=$4
tmp=$(mktemp -d /tmp/rshare-lua-install.XXXXXX)
tmp=$(realpath "$tmp")
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH RSHARE_LIBRARY LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4

for component in lib lua; do
	cmake --install "$build" --prefix "$tmp/prefix" --component $component >/dev/null
done

run() {
	prefix=$1
	core=$(find "$prefix" -path '*/lua/5.4/rshare/core.so')
	[ -n "$core" ] || { echo "FAIL: no lua/5.4/rshare/core.so under $prefix" >&2; exit 1; }
	LUA_PATH="$prefix/share/lua/5.4/?.lua" LUA_CPATH="${core%/rshare/core.so}/?.so" \
		"$lua54" "$check" "$prefix"
	LUA_PATH="$prefix/share/lua/5.1/?.lua" "$luajit" "$check" "$prefix"
}

run "$tmp/prefix"
mv "$tmp/prefix" "$tmp/moved"
run "$tmp/moved"
echo "installed Lua modules: all checks passed"
