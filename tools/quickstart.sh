#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rshare quick start, on a fresh Debian 12 machine as root (or any machine
# that already has the packages below):
#
#   tools/quickstart.sh demo   install what is missing, build, run `rshare demo`
#   tools/quickstart.sh test   install what is missing, build, run every test:
#                              the plain build, then again everything under
#                              AddressSanitizer + UndefinedBehaviorSanitizer,
#                              then the C tests under ThreadSanitizer + clang's
#                              UndefinedBehaviorSanitizer (which also checks
#                              pointer arithmetic on NULL, unlike gcc's)
set -eu

cd "$(dirname "$0")/.."

# Debian packages the build and the tests use (see README.md).
PACKAGES="build-essential cmake pkg-config man-db
  libibverbs-dev libffi-dev
  swig python3 python3-dev python3-pytest python3-cffi
  python3-pip python3-setuptools python3-wheel python3-venv mypy
  lua5.4 liblua5.4-dev luajit luarocks lua5.1 zip git
  dpkg-dev debhelper dh-python lintian
  abigail-tools clang libclang-rt-14-dev valgrind
  python3-nbclient python3-nbformat python3-ipykernel python3-jupyter-client
  lua-luv python3-numpy python3-matplotlib
  openmpi-bin libopenmpi-dev python3-mpi4py"

install_missing() {
	missing=""
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "quickstart: installing$missing"
	if [ "$(id -u)" != 0 ]; then
		echo "quickstart: run as root (or install:$missing)" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
}

# build DIR [cmake options...]
build() {
	dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j "$(nproc)"
}

case "${1:-}" in
demo)
	install_missing
	build build
	exec build/bin/rshare demo --workers 4
	;;
test)
	install_missing
	build build
	(cd build && ctest --output-on-failure -j 2)
	build build-asan -DRSHARE_SANITIZE=ON -DRSHARE_BINDINGS=ON
	(cd build-asan && ctest --output-on-failure -j 2)
	build build-tsan -DCMAKE_C_COMPILER=clang -DRSHARE_TSAN=ON -DRSHARE_BINDINGS=OFF \
		-DRSHARE_PARTS=tests/ffi
	(cd build-tsan && ctest --output-on-failure -j 2 -R '^(c_|ffi_|bench_|cli_)')
	;;
*)
	echo "usage: $0 demo|test" >&2
	exit 2
	;;
esac
