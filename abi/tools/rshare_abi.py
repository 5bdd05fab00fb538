# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Readers for the three views of the librshare ABI: the public header, the
symbol map and the built library. Shared by the gate scripts in this folder.

The header is regular on purpose (one RSHARE_API declaration per function,
explicit values on every enum member, FFI-safe types only), so a small parser
is enough; anything it does not understand is an error, never a guess.
"""

import os
import re
import subprocess

# C types allowed in the public ABI and the libffi class each maps to.
# Anything else (long, unions, struct by value, varargs...) is refused: it
# is either not FFI-safe or differs between platforms.
SCALAR_FFI = {
    "void": "void",
    "int": "sint",
    "size_t": "size_t",
    "uint32_t": "uint32",
    "uint64_t": "uint64",
}
POINTEE_OK = set(SCALAR_FFI) | {"char"}


class AbiError(Exception):
    """The input breaks a rule of the ABI (or of this parser)."""


def strip_comments(text):
    """Remove /* */ and // comments, keeping line breaks."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _code(text):
    """Header text without comments and preprocessor lines."""
    lines = strip_comments(text).splitlines()
    return "\n".join("" if ln.lstrip().startswith("#") else ln for ln in lines)


def normalize_type(words, opaque):
    """'const', 'rshare_device', '*' -> 'const rshare_device *' (validated)."""
    stars = "".join(w for w in words if w == "*")
    base = [w for w in words if w != "*"]
    const = base[:1] == ["const"]
    if const:
        base = base[1:]
    if len(base) != 1:
        raise AbiError("unsupported type: %s" % " ".join(words))
    name = base[0]
    if name not in POINTEE_OK and name not in opaque:
        raise AbiError("type %s is not in the FFI-safe set" % name)
    if not stars and (name not in SCALAR_FFI or const):
        raise AbiError("unsupported by-value type: %s" % " ".join(words))
    return ("const " if const else "") + name + (" " + stars if stars else "")


def ffi_class(ctype):
    return "pointer" if ctype.endswith("*") else SCALAR_FFI[ctype]


def _split_decl(decl, opaque):
    """'const rshare_pd *pd' -> ('const rshare_pd *', 'pd')."""
    words = re.findall(r"\w+|\*", decl)
    if len(words) < 2 or not re.match(r"[A-Za-z_]\w*$", words[-1]):
        raise AbiError("parameter without a name: %r" % decl.strip())
    return normalize_type(words[:-1], opaque), words[-1]


def parse_header(text):
    """Return {'functions': [...], 'enums': {...}, 'opaque': [...], 'macros': {...}}.

    functions: in header order, each {'name', 'returns', 'params': [(type, name)]}.
    enums: {enum_name: [(member, value)]} in header order.
    """
    code = _code(text)
    macros = dict(re.findall(r"^\s*#\s*define\s+(RSHARE_VERSION_\w+)\s+(\d+)\s*$", text, re.M))
    opaque = re.findall(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", code)
    for tag, name in opaque:
        if tag != name:
            raise AbiError("typedef struct %s %s: tag and name must match" % (tag, name))
    opaque = [name for _, name in opaque]

    enums = {}
    for name, body in re.findall(r"\benum\s+(\w+)\s*\{([^}]*)\}\s*;", code):
        members = []
        for item in filter(None, (s.strip() for s in body.split(","))):
            m = re.fullmatch(r"(\w+)\s*=\s*(-?\d+)", item)
            if not m:
                raise AbiError("enum %s: member %r needs an explicit integer value" % (name, item))
            members.append((m.group(1), int(m.group(2))))
        values = [v for _, v in members]
        if len(values) != len(set(values)):
            raise AbiError("enum %s: two members share a value" % name)
        enums[name] = members

    functions = []
    decl_re = re.compile(r"\bRSHARE_API\s+([^;{}()]*?)\b(rshare_\w+)\s*\(([^()]*)\)\s*;")
    for m in decl_re.finditer(code):
        ret_words = re.findall(r"\w+|\*", m.group(1))
        plist = m.group(3).strip()
        if not plist:
            raise AbiError("%s(): write (void) for no parameters" % m.group(2))
        if "..." in plist:
            raise AbiError("%s(): varargs are not FFI-safe" % m.group(2))
        params = [] if plist == "void" else [_split_decl(p, opaque) for p in plist.split(",")]
        functions.append({"name": m.group(2),
                          "returns": normalize_type(ret_words, opaque),
                          "params": params})
    # Every rshare_ prototype must be an RSHARE_API declaration we parsed:
    # a declaration the parser skipped would silently escape the gate.
    called = set(re.findall(r"\b(rshare_\w+)\s*\(", code))
    missed = called - {f["name"] for f in functions}
    if missed:
        raise AbiError("declarations not in the 'RSHARE_API type name(params);' form: %s"
                       % ", ".join(sorted(missed)))
    names = [f["name"] for f in functions]
    if len(names) != len(set(names)):
        raise AbiError("a function is declared twice")
    return {"functions": functions, "enums": enums, "opaque": opaque, "macros": macros}


def parse_map(text):
    """Return the version nodes of a linker version script, in order:
    [{'name', 'global': [names], 'parent': name or None, 'local_all': bool}]."""
    code = strip_comments(text)
    nodes = []
    for m in re.finditer(r"(\w[\w.]*)\s*\{(.*?)\}\s*([\w.]*)\s*;", code, re.S):
        name, body, parent = m.group(1), m.group(2), m.group(3) or None
        glob, local, section = [], [], None
        for tok in re.findall(r"global\s*:|local\s*:|[^\s;]+", body):
            if tok.startswith("global"):
                section = glob
            elif tok.startswith("local"):
                section = local
            elif section is None:
                raise AbiError("%s: symbol %s outside global:/local:" % (name, tok))
            else:
                section.append(tok)
        if local not in ([], ["*"]):
            raise AbiError("%s: local: may only hold '*'" % name)
        nodes.append({"name": name, "global": glob, "parent": parent, "local_all": local == ["*"]})
    leftover = re.sub(r"(\w[\w.]*)\s*\{.*?\}\s*[\w.]*\s*;", "", code, flags=re.S).strip()
    if leftover:
        raise AbiError("unparsed text in the map: %r" % leftover[:60])
    return nodes


def map_versions(nodes):
    """{symbol: node name}; a symbol listed twice is an error."""
    where = {}
    for node in nodes:
        for sym in node["global"]:
            if sym in where:
                raise AbiError("%s is listed in both %s and %s" % (sym, where[sym], node["name"]))
            where[sym] = node["name"]
    return where


def _readelf(*args):
    out = subprocess.run(["readelf", "-W", *args], check=True, capture_output=True,
                         text=True, env=dict(os.environ, LC_ALL="C"))
    return out.stdout


def dynamic_symbols(lib):
    """Defined dynamic symbols: [(name, version or None, default, type, bind)]."""
    syms = []
    for line in _readelf("--dyn-syms", lib).splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) < 8 or not f[0].rstrip(":").isdigit() or f[6] == "UND":
            continue
        name, version, default = f[7], None, False
        if "@@" in name:
            name, version = name.split("@@", 1)
            default = True
        elif "@" in name:
            name, version = name.split("@", 1)
        syms.append((name, version, default, f[3], f[4]))
    return syms


def dynamic_entries(lib):
    """{'SONAME': [...], 'NEEDED': [...]} from the dynamic section."""
    entries = {"SONAME": [], "NEEDED": []}
    for tag, value in re.findall(r"\((SONAME|NEEDED)\)[^\[\n]*\[([^\]]+)\]",
                                 _readelf("-d", lib)):
        entries[tag].append(value)
    return entries


def has_debug_info(lib):
    return ".debug_info" in _readelf("-S", lib)
