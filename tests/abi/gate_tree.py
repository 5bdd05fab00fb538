# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A throw-away copy of the library's sources, header and map that a test can
mutate, build in a second or two with cc (no CMake), and put through every
check of the ABI gate. Used by test_gate_mutations.py.
"""

import hashlib
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "abi" / "tools"
sys.path.insert(0, str(TOOLS))
from rshare_abi import parse_map  # noqa: E402

PY = sys.executable
CFLAGS = ["-std=gnu11", "-g", "-O0", "-fPIC", "-D_GNU_SOURCE", "-DRSHARE_BUILDING_LIBRARY"]


def library_sources():
    """The sources of the rshare and rshare_internal targets, read from
    capi/CMakeLists.txt so this copy never drifts from the real build."""
    text = (ROOT / "capi" / "CMakeLists.txt").read_text()
    sources = []
    for target in ("rshare_internal", "rshare"):
        m = re.search(r"add_library\(%s\s+(?:STATIC|SHARED)\s+([^)]*)\)" % target, text)
        assert m, "capi/CMakeLists.txt: no add_library(%s ...)" % target
        sources += [s for s in m.group(1).split() if s.endswith(".c")]
    return sources


def baselines(folder):
    """The baselines in folder, oldest node first (RSHARE_1.2 before 1.10)."""
    def node(path):
        return [int(n) for n in re.findall(r"\d+", path.stem)]
    return sorted(Path(folder).glob("RSHARE_*.abi"), key=node)


class Tree:
    """tmp/capi (include + src), tmp/abi (map, manifest, baselines): the parts
    a change to the ABI touches."""

    def __init__(self, tmp, objcache):
        self.dir = Path(tmp)
        shutil.copytree(ROOT / "capi" / "include", self.dir / "capi" / "include")
        shutil.copytree(ROOT / "capi" / "src", self.dir / "capi" / "src")
        (self.dir / "abi").mkdir()
        for name in ("rshare.map", "rshare.abi.json"):
            shutil.copy(ROOT / "abi" / name, self.dir / "abi" / name)
        shutil.copytree(ROOT / "abi" / "baselines", self.dir / "abi" / "baselines")
        self.sources = library_sources()
        self.objcache = Path(objcache)
        self.header = self.dir / "capi" / "include" / "rshare" / "rshare.h"
        self.map = self.dir / "abi" / "rshare.map"
        self.manifest = self.dir / "abi" / "rshare.abi.json"

    # -- mutations -------------------------------------------------------
    def edit(self, rel, old, new, count=1):
        """Replace old by new in a file of the copy; the test fails loudly if
        the text is not there (the mutation must really happen)."""
        path = self.dir / rel
        text = path.read_text()
        assert text.count(old) >= count, "%s: %r not found" % (rel, old)
        path.write_text(text.replace(old, new))

    def edit_sources(self, old, new):
        """Replace old by new in every library source; returns how many files."""
        hits = 0
        for src in self.sources:
            path = self.dir / "capi" / src
            text = path.read_text()
            if old in text:
                path.write_text(text.replace(old, new))
                hits += 1
        return hits

    def set_map(self, nodes):
        """Rewrite the map from [(node, [names])], each node inheriting the
        previous one, names sorted, `local: *;` in the first."""
        out, parent = [], None
        for i, (node, names) in enumerate(nodes):
            body = "".join("\t\t%s;\n" % n for n in sorted(names))
            local = "\tlocal:\n\t\t*;\n" if i == 0 else ""
            out.append("%s {\n\tglobal:\n%s%s}%s;\n" % (node, body, local,
                                                         " " + parent if parent else ""))
            parent = node
        self.map.write_text("\n".join(out))

    def map_nodes(self):
        return [(n["name"], list(n["global"])) for n in parse_map(self.map.read_text())]

    def add_source(self, rel, text):
        (self.dir / "capi" / rel).write_text(text)
        self.sources.append(rel)

    # -- build -----------------------------------------------------------
    def _compile(self, src, cflags):
        path = self.dir / "capi" / src
        # Every header of the copy is part of the key: a header mutation
        # recompiles everything, an untouched tree reuses the objects.
        key = hashlib.sha256()
        for h in sorted((self.dir / "capi").rglob("*.h")):
            key.update(h.read_bytes())
        key.update(path.read_bytes())
        key.update(" ".join(cflags).encode())
        obj = self.objcache / (key.hexdigest()[:24] + ".o")
        if not obj.exists():
            inc = ["-I%s" % (self.dir / "capi" / d) for d in ("include", "src", "src/core",
                                                                   "generated")]
            tmp = obj.with_suffix(".tmp.o")
            subprocess.run(["cc", "-c", *cflags, *inc, "-o", str(tmp), str(path)], check=True)
            tmp.rename(obj)
        return str(obj)

    def build(self, visibility="hidden", version_script=True):
        """Link librshare.so.1 from the copy; returns its path."""
        cflags = CFLAGS + ["-fvisibility=%s" % visibility]
        # The status list, generated from the copy's header as the build does.
        (self.dir / "capi" / "generated").mkdir(exist_ok=True)
        subprocess.run(["cmake", "-DHEADER=%s" % self.header,
                        "-DOUT=%s" % (self.dir / "capi" / "generated" / "rs_status_list.h"),
                        "-P", str(ROOT / "capi" / "status_list.cmake")], check=True)
        with ThreadPoolExecutor(max_workers=2) as pool:
            objs = list(pool.map(lambda s: self._compile(s, cflags), self.sources))
        lib = self.dir / "librshare.so.1"
        link = ["cc", "-shared", "-Wl,-soname,librshare.so.1", "-Wl,-z,defs", "-o", str(lib)]
        if version_script:
            link.append("-Wl,--version-script=%s" % self.map)
        subprocess.run(link + objs + ["-ldl", "-lpthread"], check=True)
        return lib

    # -- the gate --------------------------------------------------------
    def gate(self, lib):
        """Run every check of the gate; returns {check: (exit code, output)}."""
        hdr, results = str(self.header), {}

        def run(name, cmd):
            res = subprocess.run(cmd, capture_output=True, text=True)
            results[name] = (res.returncode, res.stdout + res.stderr)

        run("exports", [PY, str(TOOLS / "check_exports.py"), "--lib", str(lib),
                        "--header", hdr, "--map", str(self.map)])
        run("abidiff", [PY, str(TOOLS / "check_abidiff.py"), "--lib", str(lib), "--header", hdr]
            + ["--baseline=%s" % b for b in baselines(self.dir / "abi" / "baselines")])
        run("manifest", [PY, str(TOOLS / "gen_manifest.py"), "--header", hdr,
                         "--map", str(self.map), "--check", str(self.manifest)])
        exe = self.dir / "frozen_values"
        subprocess.run(["cc", "-I%s" % (self.dir / "capi" / "include"), "-o", str(exe),
                        str(ROOT / "tests" / "abi" / "frozen_values.c")], check=True)
        run("frozen", [str(exe)])
        return results

    def write_baseline(self, lib):
        """The newest node's baseline for lib, as abi/README.md says to make it."""
        subprocess.run(["sh", str(TOOLS / "update_baseline.sh"), str(lib),
                        str(self.dir / "abi" / "baselines")], check=True,
                       capture_output=True)

    def regenerate_manifest(self):
        subprocess.run([PY, str(TOOLS / "gen_manifest.py"), "--header", str(self.header),
                        "--map", str(self.map), "--out", str(self.manifest)], check=True)
