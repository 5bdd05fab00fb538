#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Turn the ABI manifest (abi/rshare.abi.json) into a C table for the libffi
conformance harness (tests/ffi), at build time:

  manifest_to_c.py MANIFEST OUT.h

The harness never includes rshare.h: like a dynamic-language FFI it learns
every signature, version node and constant from the manifest alone.
"""

import json
import sys

FFI_ENUM = {"void": "ABI_VOID", "sint": "ABI_SINT", "size_t": "ABI_SIZE_T",
            "uint32": "ABI_UINT32", "uint64": "ABI_UINT64", "pointer": "ABI_POINTER"}
MAX_PARAMS = 12  # ABI_MAX_PARAMS in tests/ffi/abi_table_types.h


def c_str(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def render(m):
    out = ["/* Generated from abi/rshare.abi.json by abi/tools/manifest_to_c.py. */",
           "#include \"abi_table_types.h\"", "",
           "#define ABI_LIBRARY %s" % c_str(m["library"]),
           "#define ABI_VERSION %s" % c_str(m["version"]), "",
           "static const struct abi_fn abi_fns[] = {"]
    for fn in m["functions"]:
        if len(fn["params"]) > MAX_PARAMS:
            raise SystemExit("%s: more than %d parameters" % (fn["name"], MAX_PARAMS))
        params = ", ".join("{ %s, %s, %s }" % (c_str(p["name"]), c_str(p["type"]),
                                                FFI_ENUM[p["ffi"]]) for p in fn["params"])
        out.append("\t{ %s, %s, %s, %s, %d, { %s } }," % (
            c_str(fn["name"]), c_str(fn["version"]), c_str(fn["returns"]["type"]),
            FFI_ENUM[fn["returns"]["ffi"]], len(fn["params"]), params or "{ 0 }"))
    out += ["};", "", "static const struct abi_const abi_consts[] = {"]
    for enum, members in m["enums"].items():
        for name, value in members.items():
            out.append("\t{ %s, %s, %d }," % (c_str(enum), c_str(name), value))
    out += ["};", ""]
    return "\n".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: manifest_to_c.py MANIFEST OUT.h")
    with open(sys.argv[1]) as f:
        text = render(json.load(f))
    with open(sys.argv[2], "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
