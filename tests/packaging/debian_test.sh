#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The Debian packages, as a distribution builds them and a user gets them:
#   1. `dpkg-buildpackage -us -uc -b` in a clean clone of the repository
#      (its committed HEAD), timed; with nocheck (BUILD_TESTING=OFF) no
#      test program is built;
#   2. the five packages are there, and lintian on the result reports no
#      error and no warning (an override in debian/*.lintian-overrides must
#      say why, on the comment line above it);
#   3. every package unpacked (`dpkg -x`) into one throwaway root: no
#      installed ELF file has a RUNPATH, the rshare package has the
#      broker's systemd units (system and user), and the packages' dependencies
#      resolve on this system (`apt-get install --simulate`);
#   4. from that root alone: `rshare demo`, a C program built with
#      `pkg-config rshare` (shared, and static with librshare.a), one built
#      with find_package(rshare), `python3 -c 'import rshare'`, and
#      `require "rshare"` in lua5.4 and in luajit, each checked to use the
#      root's librshare.so.1.
# DEB_BUILD_OPTIONS is passed on: "nocheck" leaves out dh_auto_test (.ci/run
# sets it, as the suite has just run on the same tree; docs/packaging.md).
# usage: debian_test.sh [SOURCE_DIR]
set -eu
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
tmp=$(mktemp -d /tmp/rshare-debian.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The broker tests under dh_auto_test run the build's programs as another
# uid, which needs to reach them (mktemp -d makes the directory 0700).
chmod 755 "$tmp"
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH PYTHONPATH LUA_PATH LUA_CPATH \
	LUA_PATH_5_4 LUA_CPATH_5_4
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# 1. The build, from a clean clone.
git clone -q "$src" "$tmp/src"
start=$(date +%s)
if ! (cd "$tmp/src" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
	tail -60 "$tmp/build.log" >&2
	cp "$tmp/build.log" /tmp/rshare-debian-build.log
	echo "FAIL: dpkg-buildpackage (DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}'):" \
		"the whole log is in /tmp/rshare-debian-build.log" >&2
	exit 1
fi
echo "debian: dpkg-buildpackage -us -uc -b took $(($(date +%s) - start)) s" \
	"(DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}')"

# nocheck configures with BUILD_TESTING=OFF: no test program is built, no
# test registered; only the two programs of the project are.
case " ${DEB_BUILD_OPTIONS:-} " in *" nocheck "*)
	obj=$(echo "$tmp"/src/obj-*)
	built=$(ls "$obj/bin" | tr '\n' ' ')
	[ "$built" = "rshare rshare-bench " ] || fail "BUILD_TESTING=OFF built: $built"
	(cd "$obj" && ctest -N) | grep -q '^Total Tests: 0$' || fail "BUILD_TESTING=OFF registered tests"
esac

# 2. The packages and lintian.
version=$(cd "$tmp/src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
debs=""
for p in librshare1 librshare-dev rshare python3-rshare lua-rshare; do
	deb="$tmp/${p}_${version}_${arch}.deb"
	if [ -f "$deb" ]; then debs="$debs $deb"; else fail "no package $p ($deb)"; fi
done
[ $failed = 0 ] || exit 1
if ! lintian --allow-root --fail-on error,warning "$tmp/rshare_${version}_${arch}.changes" \
	>"$tmp/lintian.log" 2>&1; then
	cat "$tmp/lintian.log" >&2
	fail "lintian reports errors or warnings"
else
	echo "debian: lintian: $(grep -c . "$tmp/lintian.log") lines of output, no error or warning"
	cat "$tmp/lintian.log"
fi
for overrides in "$tmp"/src/debian/*lintian-overrides "$tmp"/src/debian/source/lintian-overrides; do
	[ -f "$overrides" ] || continue
	awk '/^#/ { why = 1; next } /^[^[:space:]]/ && !why { print FILENAME ": " $0 " has no reason above it"; bad = 1 }
	     { why = 0 } END { exit bad }' "$overrides" >&2 || fail "unexplained lintian overrides"
done

# 3. The throwaway root.
root="$tmp/root"
for deb in $debs; do dpkg -x "$deb" "$root"; done
find "$root" -type f | while read -r f; do
	[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	if readelf -d "$f" | grep -Eq '\((RPATH|RUNPATH)\)'; then
		echo "FAIL: ${f#"$root"} has a run path: $(readelf -d "$f" | grep -E 'R(UN)?PATH')" >&2
		echo x >>"$tmp/runpaths"
	fi
done
[ -e "$tmp/runpaths" ] && fail "installed files with a RUNPATH"
# The broker's units (packaging/systemd), system and user, in the rshare
# package, starting the packaged command.
if [ -d "$tmp/src/packaging/systemd" ]; then
	for unit in lib/systemd/system/rshare.socket lib/systemd/system/rshare.service \
		usr/lib/systemd/user/rshare.socket usr/lib/systemd/user/rshare.service; do
		dpkg -c "$tmp/rshare_${version}_${arch}.deb" | grep -q " \./$unit\$" ||
			fail "the rshare package lacks /$unit"
	done
	grep -q '^ExecStart=/usr/bin/rshare serve' "$root/lib/systemd/system/rshare.service" ||
		fail "rshare.service does not start /usr/bin/rshare"
fi
# shellcheck disable=SC2086
apt-get install --simulate -qq $debs >"$tmp/apt.log" 2>&1 ||
	{ cat "$tmp/apt.log" >&2; fail "the packages' dependencies do not resolve"; }

# 4. Everything a user runs, from the root (the loader finds the root's
# library through LD_LIBRARY_PATH, as the system's would be found).
libdir="$root/usr/lib/$multiarch"
in_root() { LD_LIBRARY_PATH="$libdir" "$@"; }
in_root ldd "$root/usr/bin/rshare" | grep -q "librshare.so.1 => $libdir/" ||
	fail "rshare does not load the root's librshare.so.1"
in_root "$root/usr/bin/rshare" demo --workers 2 >"$tmp/demo.log" 2>&1 ||
	{ cat "$tmp/demo.log" >&2; fail "rshare demo"; }

export PKG_CONFIG_PATH="$libdir/pkgconfig"
consumer="$src/tests/packaging/consumer"
# shellcheck disable=SC2046
cc -o "$tmp/consumer-pc" "$consumer/consumer.c" $(pkg-config --cflags --libs rshare) ||
	fail "building with pkg-config rshare"
in_root "$tmp/consumer-pc" || fail "the pkg-config consumer"
# shellcheck disable=SC2046
cc -o "$tmp/consumer-static" "$consumer/consumer.c" $(pkg-config --cflags rshare) \
	$(pkg-config --static --libs rshare | sed 's/-lrshare\b/-l:librshare.a/') ||
	fail "building with pkg-config --static rshare and librshare.a"
readelf -d "$tmp/consumer-static" | grep -q 'librshare\.so' && fail "the static consumer needs librshare.so"
"$tmp/consumer-static" || fail "the static consumer"
unset PKG_CONFIG_PATH
if cmake -S "$consumer" -B "$tmp/cb" -DCMAKE_PREFIX_PATH="$root/usr" >"$tmp/cb.log" 2>&1 &&
	cmake --build "$tmp/cb" >>"$tmp/cb.log" 2>&1; then
	in_root "$tmp/cb/consumer" || fail "the find_package consumer"
	"$tmp/cb/consumer_static" || fail "the find_package consumer linked with librshare.a"
else
	cat "$tmp/cb.log" >&2
	fail "building with find_package(rshare)"
fi

site="$root/usr/lib/python3/dist-packages"
in_root env PYTHONPATH="$site" PYTHONNOUSERSITE=1 /usr/bin/python3 -c "
import rshare, sys
assert rshare.__file__.startswith(sys.argv[1]), rshare.__file__
with rshare.open('sim0') as dev, dev.alloc_pd() as pd:
    assert dev.import_pd(pd.export()).handle == pd.handle
libs = {l.split()[-1] for l in open('/proc/self/maps') if 'librshare.so' in l}
assert libs and all(l.startswith(sys.argv[1]) for l in libs), libs
print('python3: rshare', rshare.__version__, 'from', rshare.__file__)
" "$root/" || fail "python3 -c 'import rshare'"

check="$src/tests/lua/installed_check.lua"
in_root env LUA_PATH="$root/usr/share/lua/5.4/?.lua" LUA_CPATH="$libdir/lua/5.4/?.so" \
	lua5.4 "$check" "$root/usr" || fail "lua5.4: require 'rshare'"
# LuaJIT's module finds the library relative to itself (rshare/libpath.lua).
LUA_PATH="$root/usr/share/lua/5.1/?.lua" luajit "$check" "$root/usr" ||
	fail "luajit: require 'rshare'"

[ $failed = 0 ] && echo "debian test: all checks passed"
exit $failed
