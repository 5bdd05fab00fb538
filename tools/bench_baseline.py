#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Import speed against the tree before issue 17 (the ledger), in one run.

  tools/bench_baseline.py [--build BUILD] [--work DIR] [--base REV] [--current REV]
                          [--rounds N] [--quick] [--built] [--instructions]

Builds the base tree (default 07dfee7^1, main before 'Merge branch h17')
from git into DIR (default: a temporary folder, removed after), builds the
same programs in BUILD (default: build/; or, with --current, builds that
commit from git the same way: --base 07dfee7^1 --current 07dfee7 is issue
17's merge alone), then runs both in alternation,
ROUNDS times each (the order flips every round, so both see the same
conditions):

  - sim0: `rshare-bench --device sim0 --row import --json`, the medians of
    the PD, VAR, MR and DM import rows (each tree's own rshare-bench; the
    import rows' code is the same in both);
  - the stand-in mlx5 device: `hw_bench`'s mean PD and VAR import+unimport.
    Both libraries run against the *current* stand-in and the current
    hw_bench.c (copied over the base tree before it is built), so only
    librshare differs: the base library sees the stand-in as it would a
    real mlx5 (the provider's UAR at handle 0, so its table id is 0).

Prints, per row, the best (lowest) of the rounds of each side, the one
least disturbed by whatever else runs on the host, and the ratio current /
base, with whether it is within 10% (issue 17's Done-when). The
numbers are wall-clock on this host: run it on a quiet machine. --quick is a
smoke run (one round, a tenth of the samples) that shows the tool works;
its numbers mean nothing (ctest's bench_baseline_runs; --built: BUILD is
built already, as under ctest).

--instructions counts instead of timing: the instructions executed per
import (sim0, each kind) and per import + unimport pair (the stand-in's PD
and VAR), library and provider, by callgrind (valgrind), the same on every
run. It fails (exit 1) when a row of the current tree is more than 10%
over the base's: ctest's bench_baseline_instructions.

Exit 0 when both sides ran (whatever the ratios, unless --instructions),
1 when something failed, 77 when the base commit is not in this clone's
history.
"""

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent
BASE = "07dfee7^1"
TARGETS = ["rshare_bench", "hw_bench", "standin_ibverbs", "standin_mlx5"]
SIM_ROWS = ["pd import", "var import", "mr import", "dm import"]
HW_ROWS = {"stand-in PD import+unimport": r"^PD import\+unimport.*?(\d+) ns$",
           "stand-in VAR import+unimport": r"^VAR import\+unimport.*?(\d+) ns$"}
# The stand-in and its benchmark, the same on both sides.
OVERLAY = ["tests/hw/standin", "tests/hw/hw_bench.c"]


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit("bench_baseline: %s failed (exit %d):\n%s%s"
                 % (" ".join(map(str, cmd)), res.returncode, res.stdout[-4000:], res.stderr[-4000:]))
    return res.stdout


def cache_value(build, name):
    text = (build / "CMakeCache.txt").read_text()
    m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), text, re.M)
    return m.group(1) if m else ""


def build_rev(rev, work, build_type):
    """The tree of rev from git, with the current stand-in and hw_bench.c
    (copied again on every run: a kept DIR follows edits to them)."""
    tree, build = work / "src", work / "build"
    if not (build / "CMakeCache.txt").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(SRC), "archive", "--format=tar", rev],
                                 capture_output=True, check=True)
        tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(tree)
    for rel in OVERLAY:
        if (SRC / rel).is_dir():
            shutil.copytree(SRC / rel, tree / rel, dirs_exist_ok=True)
        else:
            shutil.copy2(SRC / rel, tree / rel)
    if not (build / "CMakeCache.txt").exists():
        print("building %s in %s ..." % (rev, build), flush=True)
        run(["cmake", "-S", str(tree), "-B", str(build), "-DCMAKE_BUILD_TYPE=" + build_type,
             "-DRSHARE_PARTS=tests/hw", "-DRSHARE_BINDINGS=OFF"])
    run(["cmake", "--build", str(build), "-j2", "--target"] + TARGETS)
    return build


def standin_env(build):
    """The environment that makes librshare load build's stand-in rdma-core."""
    standin = build / "tests" / "hw" / "standin"
    return dict(os.environ, RSHARE_LIBIBVERBS=str(standin / "libibverbs.so.1"),
                RSHARE_LIBMLX5=str(standin / "libmlx5.so.1"))


def measure(build, quick):
    """One round of one side: {row: ns}."""
    out = {}
    bench = [str(build / "bin" / "rshare-bench"), "--device", "sim0", "--row", "import", "--json"]
    rows = json.loads(run(bench + (["--quick"] if quick else [])))["rows"]
    for row in rows:
        if row["name"] in SIM_ROWS:
            out["sim0 " + row["name"]] = row["median"]
    text = run([str(build / "bin" / "hw_bench"), "200" if quick else "20000"],
               env=standin_env(build))
    for name, pattern in HW_ROWS.items():
        m = re.search(pattern, text, re.M)
        if not m:
            sys.exit("bench_baseline: no '%s' line in hw_bench's output:\n%s" % (name, text))
        out[name] = float(m.group(1))
    missing = [r for r in SIM_ROWS if "sim0 " + r not in out]
    if missing:
        sys.exit("bench_baseline: rshare-bench printed no row %s" % missing)
    return out


# --instructions: (row, program and arguments, functions collected). A
# row's count is per call of the first function; its rows run the same
# code in both trees (rshare-bench's import rows, the overlaid hw_bench).
# `--row "pd import"` runs every row whose name holds it, "pd import+unimport"
# too: a sim0 count is per import over the imports of both rows.
def sim_row(kind):
    return ("sim0 %s import" % kind,
            ["rshare-bench", "--device", "sim0", "--quick", "--row", "%s import" % kind],
            ["rshare_%s_import" % kind])


INSN_ROWS = [sim_row(k) for k in ("pd", "var", "mr", "dm")] + [
    ("stand-in PD import+unimport", ["hw_bench", "2000"],
     ["rshare_pd_import", "rshare_pd_unimport"]),
    ("stand-in VAR import+unimport", ["hw_bench", "2000"],
     ["rshare_var_import", "rshare_var_unimport"]),
]


def instructions(build, work, argv, funcs):
    """Instructions executed inside funcs (and all they call) per call of
    funcs[0], counted by callgrind."""
    out = work / "callgrind.out"
    run(["valgrind", "--tool=callgrind", "--callgrind-out-file=%s" % out]
        + ["--toggle-collect=%s" % f for f in funcs]
        + [str(build / "bin" / argv[0])] + argv[1:], env=standin_env(build))
    text = out.read_text()
    out.unlink()
    total = re.search(r"^summary: (\d+)$", text, re.M)
    # Function ids are named once ("fn=(7) name"), then used bare ("cfn=(7)");
    # each call arc is a "cfn=" line followed by "calls=N ...".
    names = dict(re.findall(r"^c?fn=\((\d+)\) (.+)$", text, re.M))
    calls = sum(int(n) for fid, n in re.findall(r"^cfn=\((\d+)\).*\ncalls=(\d+)", text, re.M)
                if names.get(fid) == funcs[0])
    if not total or not int(total.group(1)) or not calls:
        sys.exit("bench_baseline: callgrind counted no call of %s in %s" % (funcs[0], argv))
    return int(total.group(1)) / calls


def count_instructions(base, build, work):
    """Print both trees' counts; 0 when every row is within 10%, else 1."""
    print("instructions per call, base against current (callgrind)")
    print("%-30s %10s %10s %8s" % ("row", "base", "current", "ratio"))
    over = 0
    for name, argv, funcs in INSN_ROWS:
        b = instructions(base, work, argv, funcs)
        c = instructions(build, work, argv, funcs)
        ratio = c / b
        verdict = "within 10%" if ratio <= 1.10 else "OVER 10%"
        over += ratio > 1.10
        print("%-30s %10.1f %10.1f %7.3fx  %s" % (name, b, c, ratio, verdict))
    return 1 if over else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=SRC / "build", help="the current build")
    ap.add_argument("--work", type=Path, help="where to build the base tree (kept)")
    ap.add_argument("--base", default=BASE, help="the base commit (default %s)" % BASE)
    ap.add_argument("--current", help="a commit to build and time instead of BUILD")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help="a smoke run: the numbers mean nothing")
    ap.add_argument("--built", action="store_true", help="do not build BUILD (ctest)")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions (callgrind) instead of timing; fail over 10%%")
    a = ap.parse_args()
    for rev in filter(None, (a.base, a.current)):
        if subprocess.run(["git", "-C", str(SRC), "cat-file", "-e", rev + "^{commit}"],
                          capture_output=True).returncode != 0:
            print("SKIPPED: %s is not in this clone's history (git fetch --unshallow)" % rev)
            return 77
    if a.instructions and not shutil.which("valgrind"):
        print("SKIPPED: valgrind is not installed (apt-get install valgrind)")
        return 77
    build = a.build.resolve()
    if not (build / "CMakeCache.txt").exists():
        sys.exit("bench_baseline: %s is not a configured build" % build)
    if cache_value(build, "RSHARE_SANITIZE") in ("ON", "1", "TRUE"):
        sys.exit("bench_baseline: %s is a sanitizer build; time a plain one" % build)
    build_type = cache_value(build, "CMAKE_BUILD_TYPE") or "RelWithDebInfo"
    rounds = 1 if a.quick else max(1, a.rounds)

    tmp = None
    if a.work:
        work = a.work.resolve()
    else:
        tmp = tempfile.TemporaryDirectory(prefix="rshare-bench-base-")
        work = Path(tmp.name)
    try:
        base = build_rev(a.base, work / "base", build_type)
        if a.current:
            build = build_rev(a.current, work / "current", build_type)
        elif not a.built:
            run(["cmake", "--build", str(build), "-j2", "--target"] + TARGETS)
        if a.instructions:
            return count_instructions(base, build, work)
        sides = {"base": [], "current": []}
        for r in range(rounds):
            order = ("base", "current") if r % 2 == 0 else ("current", "base")
            for side in order:
                sides[side].append(measure(base if side == "base" else build, a.quick))
    finally:
        if tmp:
            tmp.cleanup()

    print("import speed, %s (base) against %s (current), %s build, best of %d "
          "round(s) in alternation%s" % (a.base, a.current or "this tree", build_type, rounds,
                                        " (--quick: not for numbers)" if a.quick else ""))
    print("%-30s %10s %10s %8s" % ("row (ns)", "base", "current", "ratio"))
    for row in sides["base"][0]:
        b = min(m[row] for m in sides["base"])
        c = min(m[row] for m in sides["current"])
        ratio = c / b if b else float("inf")
        verdict = "within 10%" if ratio <= 1.10 else "over by %.0f%%" % ((ratio - 1.10) * 100)
        print("%-30s %10.0f %10.0f %7.3fx  %s" % (row, b, c, ratio, verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
