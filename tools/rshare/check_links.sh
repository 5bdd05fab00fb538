#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# check_links.sh RSHARE [CONTROL]
# The `rshare` command must be a plain user of the public library: it needs
# librshare.so.1 and has none of the library's internal code (rs_* symbols)
# linked in, so there is one copy of the library's state (the thread's last
# error among it). CONTROL, a program that does link the internal library
# (rshare-bench), must fail the same check: it shows the check can fail.
set -eu

public_only() {
	readelf -d "$1" | grep -q 'NEEDED.*\[librshare\.so\.1\]' || {
		echo "$1: librshare.so.1 is not among its NEEDED libraries"
		return 1
	}
	internal=$(nm --defined-only "$1" | awk '$3 ~ /^rs_/ { printf "%s ", $3 }')
	[ -z "$internal" ] || {
		echo "$1: has internal library code linked in: $internal"
		return 1
	}
	nm -D --undefined-only "$1" | grep -q ' rshare_device_open' || {
		echo "$1: does not take rshare_device_open from the shared library"
		return 1
	}
}

public_only "$1"
echo "$1: links only librshare.so.1"
if [ $# -gt 1 ]; then
	if public_only "$2" >/dev/null; then
		echo "$2 passes the check although it links the internal library"
		exit 1
	fi
	echo "$2: (control) correctly flagged"
fi
