#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# check_fresh_configure.sh SOURCE_DIR WORK_DIR
# On a fresh configure (an empty build folder, the cache written for the
# first time) the examples' tests against the stand-in are registered: they
# are added after RSHARE_PARTS is known, not only on a second `cmake .`.
set -u
src=$1 work=$2
rm -rf "$work"
if ! cmake -S "$src" -B "$work" -DRSHARE_BINDINGS=OFF >"$work.log" 2>&1; then
	echo "FAIL: configure failed"; cat "$work.log"; exit 1
fi
if ! grep -q 'examples/c/native_reg_mr not built' "$work.log" &&
   ! ctest --test-dir "$work" -N -R '^example_c_native_reg_mr_standin$' | grep -q 'Total Tests: 1'; then
	echo "FAIL: example_c_native_reg_mr_standin is not registered on a fresh configure"
	exit 1
fi
rm -rf "$work" "$work.log"
echo "fresh configure: example_c_native_reg_mr_standin registered"
