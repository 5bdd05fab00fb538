#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Run rshare-bench --quick --json and check its output: one JSON object
with a row for every table entry, each with positive medians, a ratio or a
difference, and for rows with an aim, whether it was met (and why not)."""
import json
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--quick", "--json"], check=True,
                     stdout=subprocess.PIPE, text=True).stdout
doc = json.loads(out)
names = [r["name"] for r in doc["rows"]]
for want in ("pd alloc", "pd import+unimport", "var free", "share 1000 blobs",
             "first share, fresh peer", "buf import", "64 MiB to 8 processes"):
    assert want in names, f"row {want!r} missing from {names}"
for r in doc["rows"]:
    assert r["unit"] in ("ns", "us"), r
    assert r["median"] > 0 and r["floor_median"] >= 0, r
    assert r["p99"] >= r["median"] and r["floor_p99"] >= r["floor_median"], r
    assert r["ratio"] is not None or "difference" in r, r
    if "aim" in r and not r["aim_met"]:
        assert r["why"], r
# One buffer registered once against eight registrations of their own.
share = next(r for r in doc["rows"] if r["name"] == "64 MiB to 8 processes")
assert share["pinned_bytes"] == 64 << 20, share
assert share["floor_pinned_bytes"] == 8 * (64 << 20), share
print(f"bench_smoke: {len(names)} rows ok")
