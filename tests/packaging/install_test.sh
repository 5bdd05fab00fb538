#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The installed rshare, used as its users would: `cmake --install` into a
# temporary prefix, then
#   - the installed command runs without LD_LIBRARY_PATH (its RUNPATH);
#   - a program builds with pkg-config and with find_package(rshare) against
#     the prefix, and runs;
#   - each install component alone lands exactly its own files, and together
#     they are the whole install (nothing outside a component).
# usage: install_test.sh BUILD_DIR SOURCE_DIR CC "CFLAGS" BINDINGS(ON|OFF)
set -eu
build=$1 src=$2 cc=$3 cflags=$4 bindings=$5
tmp=$(mktemp -d /tmp/rshare-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

cmake --install "$build" --prefix "$tmp/all" >/dev/null

# The command, from the prefix alone.
out=$("$tmp/all/bin/rshare" version) || fail "installed rshare version: exit $?"
case $out in "rshare 1."*) ;; *) fail "installed rshare version printed '$out'" ;; esac
"$tmp/all/bin/rshare" devices | grep -q sim0 || fail "installed rshare devices lacks sim0"

# pkg-config.
pc=$(find "$tmp/all" -name rshare.pc)
[ -n "$pc" ] || fail "no rshare.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
pkg-config --exists 'rshare >= 1.0' || fail "pkg-config: rshare >= 1.0 not found"
libdir=$(pkg-config --variable=libdir rshare)
[ -e "$libdir/librshare.so.1" ] || fail "pkg-config libdir $libdir has no librshare.so.1"
# shellcheck disable=SC2046,SC2086
$cc $cflags -o "$tmp/consumer-pc" "$src/tests/packaging/consumer/consumer.c" \
	$(pkg-config --cflags --libs rshare) -Wl,-rpath,"$libdir" ||
	fail "building with pkg-config"
"$tmp/consumer-pc" || fail "the pkg-config consumer failed"
unset PKG_CONFIG_PATH

# find_package(rshare) in a CMake project.
if cmake -S "$src/tests/packaging/consumer" -B "$tmp/cb" -DCMAKE_PREFIX_PATH="$tmp/all" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" >"$tmp/cb.log" 2>&1 &&
	cmake --build "$tmp/cb" >>"$tmp/cb.log" 2>&1; then
	"$tmp/cb/consumer" || fail "the find_package consumer failed"
	# rshare::rshare_static (librshare.a): runs with no librshare.so.1 at all.
	readelf -d "$tmp/cb/consumer_static" | grep -q 'librshare\.so' &&
		fail "consumer_static needs librshare.so"
	"$tmp/cb/consumer_static" || fail "the find_package consumer linked with librshare.a failed"
else
	cat "$tmp/cb.log" >&2
	fail "building with find_package(rshare)"
fi
# The version file: a 2.0 request must not accept 1.x.
mkdir "$tmp/v2"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(v2 LANGUAGES NONE)\nfind_package(rshare 2.0 REQUIRED)\n' >"$tmp/v2/CMakeLists.txt"
cmake -S "$tmp/v2" -B "$tmp/v2/b" -DCMAKE_PREFIX_PATH="$tmp/all" >/dev/null 2>&1 &&
	fail "find_package(rshare 2.0) accepted version 1"

# Components: each alone, then their union against the full install.
list() { (cd "$1" && find . \( -type f -o -type l \) | sort); }
components="lib dev bin"
[ "$bindings" = ON ] && components="$components python lua"
: >"$tmp/union"
for c in $components; do
	cmake --install "$build" --prefix "$tmp/$c" --component "$c" >/dev/null
	list "$tmp/$c" >"$tmp/$c.files"
	cat "$tmp/$c.files" >>"$tmp/union"
	# What must land, and what must not.
	case $c in
	lib) want='/librshare\.so\.1' ; never='include/|bin/|\.pc$|python|lua|librshare\.so$' ;;
	dev) want='include/rshare/rshare\.h|/librshare\.so$|/librshare\.a$|/rshare\.pc$|rshareConfig\.cmake$|man3/rshare_pd_import\.3'
	     never='bin/|librshare\.so\.1|python|lua|man1/' ;;
	bin) want='bin/rshare$|bash-completion/completions/rshare$|man1/rshare\.1|lib/systemd/system/rshare\.socket$|lib/systemd/user/rshare\.service$'
	     never='include/|\.so(\.|$)|\.pc$|/cmake/|python|lua|man3/' ;;
	python) want='/rshare/__init__\.py$' ; never='include/|bin/|lua|librshare' ;;
	lua) want='lua/5\.4/rshare\.lua$|lua/5\.4/rshare/core\.so$|lua/5\.1/rshare/libpath\.lua$' ; never='include/|bin/|python|librshare' ;;
	esac
	for w in $(echo "$want" | tr '|' ' '); do
		grep -Eq "$w" "$tmp/$c.files" || fail "component $c lacks $w"
	done
	if grep -Eq "$never" "$tmp/$c.files"; then
		fail "component $c installs other components' files: $(grep -E "$never" "$tmp/$c.files" | tr '\n' ' ')"
	fi
done
sort "$tmp/union" >"$tmp/union.sorted"
list "$tmp/all" >"$tmp/all.files"
if ! cmp -s "$tmp/union.sorted" "$tmp/all.files"; then
	fail "files of no install component (give their install() rule COMPONENT lib, dev, bin, python or lua), or of two:"
	diff "$tmp/union.sorted" "$tmp/all.files" >&2 || true
fi
# The library component alone is enough to run a program built elsewhere.
LD_LIBRARY_PATH=$(dirname "$(find "$tmp/lib" -name librshare.so.1)") "$tmp/consumer-pc" >/dev/null ||
	fail "the consumer does not run on the lib component alone"

[ $failed = 0 ] && echo "install test: all checks passed"
exit $failed
