#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Compare a built librshare.so.1 with the checked-in ABI baseline.

  check_abidiff.py --lib L --header H --baseline abi/librshare.so.1.abi

Two checks, both must pass:
 1. Released version nodes are frozen: every symbol of the baseline is still
    exported at the same node, and every new symbol sits in a node that the
    baseline does not have (a new RSHARE_1.x node). Symbol level, so it holds
    even without debug info.
 2. abidiff (libabigail), with the public header given so that only the public
    ABI counts: no removed or changed function or variable, no symbol change
    outside the debug info. Added functions are allowed (check 1 places them).

Exit 0 = compatible, 1 = the gate fails, 77 = cannot check types here (ctest
skip: another architecture than the baseline's, or a library without -g).
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from rshare_abi import dynamic_symbols, has_debug_info

SKIP = 77
# The baseline records x86_64 (LP64) DWARF; other targets need their own.
BASELINE_MACHINE = "x86_64"


def baseline_symbols(path):
    root = ET.parse(path).getroot()
    syms = {}
    for el in root.iter("elf-symbol"):
        syms[el.get("name")] = el.get("version")
    return syms


def check_nodes(lib, baseline):
    problems = []
    old = baseline_symbols(baseline)
    frozen_nodes = set(old.values())
    new = {}
    for name, version, default, typ, _ in dynamic_symbols(lib):
        if typ == "OBJECT" and version is None and re.fullmatch(r"RSHARE_[\d.]+", name):
            continue  # the linker's absolute symbol for a version definition
        new[name] = (version if default else "%s (not default)" % version) if version \
            else "unversioned"
    for name, version in sorted(old.items()):
        if name not in new:
            problems.append("%s@@%s: removed (or renamed) from a released node" % (name, version))
        elif new[name] != version:
            problems.append("%s: moved from released node %s to %s" % (name, version, new[name]))
    for name, version in sorted(new.items()):
        if name not in old and version in frozen_nodes:
            problems.append("%s: added to released node %s; new functions go in a new "
                            "node (RSHARE_1.x {...} %s;)" % (name, version, version))
    return problems


def run_abidiff(lib, header, baseline):
    cmd = ["abidiff", "--drop-private-types", "--headers-dir2", os.path.dirname(header),
           "--no-show-locs", baseline, lib]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    report = res.stdout + res.stderr
    problems = []
    if res.returncode & 3:
        problems.append("abidiff could not compare (exit %d)" % res.returncode)
    if res.returncode & 8:
        problems.append("abidiff: incompatible change")
    # Summary lines look like "Functions changes summary: 0 Removed, 1 Changed
    # (2 filtered out), 0 Added function"; read each count on its own.
    for line in re.findall(r"^.* changes summary: .*$", report, re.M):
        kind = line.split(" changes summary")[0]
        count = {word: int(n) for n, word in re.findall(r"(\d+) (Removed|Changed|Added)", line)}
        if count.get("Removed") or count.get("Changed"):
            problems.append("abidiff: %s" % line.strip())
        elif count.get("Added") and kind != "Functions":
            # Only functions may be added (check 1 places them): no public
            # variables, no symbols without debug info.
            problems.append("abidiff: %s" % line.strip())
    if res.returncode & 4 and not problems and "Added function" not in report:
        problems.append("abidiff reports a change this script does not understand")
    return problems, report, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--baseline", required=True)
    args = ap.parse_args()

    if platform.machine() != BASELINE_MACHINE:
        print("SKIP: the baseline is for %s, this is %s" % (BASELINE_MACHINE, platform.machine()))
        return SKIP
    problems = check_nodes(args.lib, args.baseline)
    if has_debug_info(args.lib):
        diff_problems, report, cmd = run_abidiff(args.lib, args.header, args.baseline)
        problems += diff_problems
        if diff_problems or report.strip():
            print("$ " + " ".join(cmd))
            print(report.rstrip())
    elif not problems:
        print("SKIP: symbol versions checked, but %s has no debug info for abidiff to compare "
              "types: build with -g (RelWithDebInfo, the default, or Debug)" % args.lib)
        return SKIP
    for p in problems:
        print("FAIL: %s" % p)
    if problems:
        print("If the change is an intended addition in a new node, see abi/README.md "
              "(update the baseline in the same commit).")
        return 1
    print("OK: %s is ABI compatible with %s" % (args.lib, args.baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
