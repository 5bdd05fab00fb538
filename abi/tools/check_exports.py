#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check that the three lists of the ABI agree exactly:

  the functions declared in the public header,
  the names in the symbol map (abi/rshare.map),
  the dynamic symbols the built library exports,

and that the library exports nothing else, every function at the map node
that lists it (name@@RSHARE_x.y), with SONAME librshare.so.1 and no DT_NEEDED
on rdma-core (the hardware provider dlopens it, so librshare loads anywhere).

  check_exports.py --lib L --header H --map M
Exit 0 when everything agrees, 1 with one line per problem otherwise.
"""

import argparse
import re
import sys

from rshare_abi import AbiError, dynamic_entries, dynamic_symbols, map_versions, \
    parse_header, parse_map

SONAME = "librshare.so.1"
FORBIDDEN_NEEDED = ("libibverbs", "libmlx5", "librdmacm")


def check_map(nodes):
    """The map's own rules (abi/README.md): nodes RSHARE_1.0, RSHARE_1.1, ...
    each inheriting the previous one, `local: *;` once in the first node,
    names sorted in each node."""
    problems = []
    if not nodes:
        return ["the map has no version node"]
    for i, node in enumerate(nodes):
        if not re.fullmatch(r"RSHARE_1\.\d+", node["name"]):
            problems.append("map node %s: must be named RSHARE_1.<minor>" % node["name"])
        want_parent = nodes[i - 1]["name"] if i else None
        if node["parent"] != want_parent:
            problems.append("map node %s: must inherit %s, not %s"
                            % (node["name"], want_parent, node["parent"]))
        if node["local_all"] != (i == 0):
            problems.append("map node %s: `local: *;` belongs in the first node only"
                            % node["name"])
        if node["global"] != sorted(node["global"]):
            problems.append("map node %s: names are not sorted" % node["name"])
        for sym in node["global"]:
            if not re.fullmatch(r"rshare_[a-z0-9_]+", sym):
                problems.append("map node %s: %r is not a plain rshare_ name (no wildcards)"
                                % (node["name"], sym))
    return problems


def check(lib, header_text, map_text):
    problems = []
    header = {f["name"] for f in parse_header(header_text)["functions"]}
    nodes = parse_map(map_text)
    problems += check_map(nodes)
    where = map_versions(nodes)
    node_names = {n["name"] for n in nodes}

    for name in sorted(header - set(where)):
        problems.append("%s: declared in the header, missing from the map" % name)
    for name in sorted(set(where) - header):
        problems.append("%s: in the map, not declared in the header" % name)

    exported = {}
    for name, version, default, typ, bind in dynamic_symbols(lib):
        # The linker emits one absolute symbol per version definition.
        if typ == "OBJECT" and name in node_names and version in (None, name):
            continue
        if name in exported:
            problems.append("%s: exported twice (%s@%s and @%s)"
                            % (name, name, exported[name][0], version))
            continue
        exported[name] = (version, default, typ, bind)
        if name not in where:
            problems.append("%s: exported by the library, not in the map "
                            "(internal symbol leak?)" % name)
        elif (version, default, typ, bind) != (where[name], True, "FUNC", "GLOBAL"):
            shown = name + ("@@" if default else "@") + version if version else name
            problems.append("%s: exported as %s %s %s; want FUNC GLOBAL %s@@%s"
                            % (name, typ, bind, shown, name, where[name]))
    for name in sorted(set(where) - set(exported)):
        problems.append("%s: in the map, not exported by the library" % name)

    dyn = dynamic_entries(lib)
    if dyn["SONAME"] != [SONAME]:
        problems.append("SONAME is %s, want %s" % (dyn["SONAME"] or "missing", SONAME))
    for needed in dyn["NEEDED"]:
        if needed.startswith(FORBIDDEN_NEEDED):
            problems.append("DT_NEEDED %s: rdma-core must be dlopened, not linked" % needed)
    return problems, len(exported)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--map", required=True)
    args = ap.parse_args()
    with open(args.header) as h, open(args.map) as m:
        try:
            problems, count = check(args.lib, h.read(), m.read())
        except AbiError as e:
            problems, count = [str(e)], 0
    for p in problems:
        print("FAIL: %s" % p)
    if problems:
        return 1
    print("OK: header, map and %s agree on %d functions" % (args.lib, count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
