#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The licence tag of every source file: check it, or add it.

    tools/spdx_tag.py --check   list each source file without the tag and
                                the exact line to add (exit 1 if any)
    tools/spdx_tag.py --fix     add the line where it is missing

Source files are the repository's files (tracked, or new and not ignored)
of the types below: C, headers, SWIG, Python, Lua, CMake, shell, linker
maps, pkg-config and CMake templates, and any script with a #! line. The
tag goes on the first line, or on the second after a #! line.
"""
import os
import subprocess
import sys

LICENSE = "GPL-2.0-only OR BSD-2-Clause"
TAG = "SPDX-License-Identifier: " + LICENSE

C_STYLE = "/* %s */"
HASH = "# %s"
LUA = "-- %s"

BY_SUFFIX = {
    ".c": C_STYLE, ".h": C_STYLE, ".i": C_STYLE, ".map": C_STYLE,
    ".py": HASH, ".pyi": HASH, ".sh": HASH, ".bash": HASH, ".cmake": HASH,
    ".pc.in": HASH, ".cmake.in": HASH,
    ".lua": LUA,
}
BY_NAME = {"CMakeLists.txt": HASH}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def repo_files():
    """Tracked files and new ones git does not ignore; a plain tree walk
    (build directories and dot directories skipped) outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others",
                              "--exclude-standard", "-z"], check=True,
                             capture_output=True).stdout
        return sorted({f for f in out.decode().split("\0") if f})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(top, n), ROOT) for n in names]
        return sorted(files)


def comment_style(path, first_line):
    name = os.path.basename(path)
    if name in BY_NAME:
        return BY_NAME[name]
    for suffix in sorted(BY_SUFFIX, key=len, reverse=True):
        if name.endswith(suffix):
            return BY_SUFFIX[suffix]
    if first_line.startswith("#!"):
        return LUA if "lua" in first_line else HASH
    return None


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("--check", "--fix"):
        sys.exit(__doc__)
    fix = sys.argv[1] == "--fix"
    missing = []
    for rel in repo_files():
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue  # binary data
        lines = text.split("\n")
        style = comment_style(rel, lines[0])
        if style is None or TAG in "\n".join(lines[:3]):
            continue
        line = style % TAG
        at = 1 if lines[0].startswith("#!") else 0
        missing.append((rel, line, at))
        if fix:
            lines.insert(at, line)
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
    for rel, line, at in missing:
        where = "as line 2, after the #! line" if at else "as the first line"
        if fix:
            print("tagged %s" % rel)
        else:
            print("%s: no licence tag; add %s:\n    %s" % (rel, where, line))
    if missing and not fix:
        print("\n%d file(s) without the licence tag (README.md, \"Licence\"); "
              "tools/spdx_tag.py --fix adds it." % len(missing))
        sys.exit(1)
    if not missing:
        print("every source file carries \"%s\"" % TAG)


if __name__ == "__main__":
    main()
