#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A luarocks source rock of this tree, to install rshare's Lua module
# anywhere, offline, without the tree:
#
#   packaging/make_src_rock.sh [OUTDIR]      # OUTDIR/rshare-scm-1.src.rock
#   luarocks --lua-version=5.4 install OUTDIR/rshare-scm-1.src.rock
#
# The rock holds the rockspec, with source.url naming the tarball beside it
# (the tree's own rockspec names the tree, "."), and that tarball: the
# tree's files as a clone has them (tracked, and new ones git does not
# ignore), under rshare/.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath "${1:-.}")
tmp=$(mktemp -d /tmp/rshare-rock.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
spec=$(cd "$src" && ls ./*.rockspec)
spec=${spec#./}
rock="${spec%.rockspec}.src.rock"

(cd "$src" && git ls-files -co --exclude-standard -z |
	xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - --transform 's|^|rshare/|' -czf "$tmp/rshare-source.tar.gz")
sed 's|^  url = "\.",$|  url = "rshare-source.tar.gz",\n  dir = "rshare",|' "$src/$spec" >"$tmp/$spec"
grep -q '"rshare-source.tar.gz"' "$tmp/$spec" || { echo "make_src_rock: no source.url to replace in $spec" >&2; exit 1; }
rm -f "$out/$rock"
(cd "$tmp" && zip -q "$out/$rock" "$spec" rshare-source.tar.gz)
echo "$out/$rock"
