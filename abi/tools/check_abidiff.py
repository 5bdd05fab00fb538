#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Compare a built librshare.so.1 with the checked-in ABI baselines.

  check_abidiff.py --lib L --header H --baseline abi/baselines/RSHARE_1.0.abi \
                   --baseline abi/baselines/RSHARE_1.1.abi

One baseline per released version node, oldest first (abi/README.md). Against
every baseline but the last, additions only: the library may add functions,
in nodes that baseline does not have. Against the last (the latest release),
no change at all: a new function needs a new node and a new baseline for it
(abi/tools/update_baseline.sh), committed with it.

Two checks per baseline, both must pass:
 1. Version nodes: every symbol of the baseline is still exported at the same
    node; every new symbol sits in a node that the baseline does not have (a
    new RSHARE_1.x node), and for the last baseline there is no new symbol.
    Symbol level, so it holds even without debug info.
 2. abidiff (libabigail), with the public header given so that only the public
    ABI counts: no removed or changed function or variable, no symbol change
    outside the debug info; added functions only against an older baseline
    (check 1 places them).

Exit 0 = compatible, 1 = the gate fails, 77 = cannot check types here (ctest
skip: another architecture than the baselines', or a library without -g).
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
# The baselines record x86_64 (LP64) DWARF; other targets need their own.
BASELINE_MACHINE = "x86_64"
REGENERATE = "abi/tools/update_baseline.sh BUILD_DIR/lib/librshare.so.1"


def baseline_symbols(path):
    root = ET.parse(path).getroot()
    syms = {}
    for el in root.iter("elf-symbol"):
        syms[el.get("name")] = el.get("version")
    return syms


def library_symbols(lib):
    new = {}
    for name, version, default, typ, _ in dynamic_symbols(lib):
        if typ == "OBJECT" and version is None and re.fullmatch(r"RSHARE_[\d.]+", name):
            continue  # the linker's absolute symbol for a version definition
        new[name] = (version if default else "%s (not default)" % version) if version \
            else "unversioned"
    return new


def check_nodes(new, baseline, latest):
    problems = []
    old = baseline_symbols(baseline)
    frozen_nodes = set(old.values())
    for name, version in sorted(old.items()):
        if name not in new:
            problems.append("%s@@%s: removed (or renamed) from a released node" % (name, version))
        elif new[name] != version:
            problems.append("%s: moved from released node %s to %s" % (name, version, new[name]))
    for name, version in sorted(new.items()):
        if name in old:
            continue
        if version in frozen_nodes:
            problems.append("%s: added to released node %s; new functions go in a new "
                            "node (RSHARE_1.x {...} %s;)" % (name, version, version))
        elif latest:
            problems.append("%s@@%s: not in the latest baseline %s: a new node needs its "
                            "own baseline, made with %s (abi/README.md)"
                            % (name, version, os.path.basename(baseline), REGENERATE))
    return problems


def run_abidiff(lib, header, baseline, latest):
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
        elif count.get("Added") and (latest or kind != "Functions"):
            # Against an older baseline only functions may be added (check 1
            # places them): no public variables, no symbols without debug
            # info. Against the latest, nothing.
            problems.append("abidiff: %s" % line.strip())
    if res.returncode & 4 and not problems and (latest or "Added function" not in report):
        problems.append("abidiff reports a change this script does not understand")
    return problems, report, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--baseline", required=True, action="append",
                    help="a released node's baseline, oldest first; repeat for each")
    args = ap.parse_args()

    if platform.machine() != BASELINE_MACHINE:
        print("SKIP: the baselines are for %s, this is %s" % (BASELINE_MACHINE,
                                                              platform.machine()))
        return SKIP
    new = library_symbols(args.lib)
    debug = has_debug_info(args.lib)
    problems = []
    for i, baseline in enumerate(args.baseline):
        latest = i == len(args.baseline) - 1
        rule = "no change (latest release)" if latest else "additions only"
        found = check_nodes(new, baseline, latest)
        if debug:
            diff_problems, report, cmd = run_abidiff(args.lib, args.header, baseline, latest)
            found += diff_problems
            if diff_problems or report.strip():
                print("$ " + " ".join(cmd))
                print(report.rstrip())
        for p in found:
            print("FAIL (%s, %s): %s" % (os.path.basename(baseline), rule, p))
        if not found:
            print("OK: %s against %s: %s%s" % (args.lib, os.path.basename(baseline), rule,
                                              "" if debug else " (symbol versions only)"))
        problems += found
    if problems:
        print("If the change is an intended addition in a new node, see abi/README.md "
              "(add its baseline in the same commit). While the latest node (%s) is not "
              "released yet, an intended change to it rewrites its baseline: %s"
              % (os.path.basename(args.baseline[-1])[:-len(".abi")], REGENERATE))
        return 1
    if not debug:
        print("SKIP: symbol versions checked, but %s has no debug info for abidiff to compare "
              "types: build with -g (RelWithDebInfo, the default, or Debug)" % args.lib)
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
