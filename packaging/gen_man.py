#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Generate the rshare manual pages, in roff, at build time.

Section 3 comes from the public header's doc comments, one page per
function family (a family is a banner section of the header, such as
"Protection domains"), a `.so` alias page per function (so that
`man 3 rshare_pd_import` works), and the overview rshare(3) with the
header's conventions and its enums. Section 1, rshare(1), comes from the
command's own --help texts. A function or a subcommand added later gets its
page without any change here.

usage: gen_man.py section3 HEADER VERSION OUTDIR
       gen_man.py section1 RSHARE_BINARY VERSION OUTDIR
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import time

MANUAL = "rshare manual"


# ---- roff helpers -------------------------------------------------------------

def esc(text):
    """Escape text for roff: backslashes, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def inline(text):
    """Escaped prose with function names in bold: rshare_pd_free() -> bold."""
    text = esc(text)
    return re.sub(r"\b(rshare_[a-z0-9_]+)\(\)", r"\\fB\1\\fP()", text)


def th(name, section, version, date):
    return ['.TH %s %s "%s" "rshare %s" "%s"' % (name.upper(), section, date, version, MANUAL)]


def page_date(path):
    """The date shown on the pages: SOURCE_DATE_EPOCH, else the input's mtime
    (so that a rebuild of the same source makes the same pages)."""
    stamp = os.environ.get("SOURCE_DATE_EPOCH")
    when = int(stamp) if stamp else int(os.stat(path).st_mtime)
    return time.strftime("%Y-%m-%d", time.gmtime(when))


def paragraphs(text):
    """Doc comment text -> roff paragraphs (blank lines separate them; lines
    starting with "-" are list items)."""
    out = []
    # The statuses in a paragraph of their own.
    text = re.sub(r"\n(Returns |Statuses as )", r"\n\n\1", text)
    for para in re.split(r"\n\s*\n", text.strip()):
        lines = para.split("\n")
        if any(line.lstrip().startswith("- ") for line in lines):
            items, cur = [], None
            for line in lines:
                s = line.strip()
                if s.startswith("- "):
                    cur = [s[2:]]
                    items.append(cur)
                elif cur is not None:
                    cur.append(s)
                else:
                    out += [".PP", inline(s)]
            for item in items:
                out += [".IP \\(bu 2", inline(" ".join(item))]
        else:
            out += [".PP", inline(" ".join(line.strip() for line in lines))]
    return out


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# ---- the header -----------------------------------------------------------------

def comment_text(raw):
    """The text of a /** ... */ comment, without the stars."""
    raw = re.sub(r"^/\*\*<?", "", raw.strip())
    raw = re.sub(r"\*/$", "", raw)
    lines = [re.sub(r"^\s*\* ?", "", line) for line in raw.split("\n")]
    return "\n".join(lines).strip()


Function = collections.namedtuple("Function", "name decl doc")
Enum = collections.namedtuple("Enum", "name doc members")


def parse_header(text):
    """Sections (title, [Function]), enums, the top comment."""
    # The first comment that is not the licence tag: what the header is.
    top = next(c for c in re.findall(r"/\*.*?\*/", text, re.S) if "SPDX-License" not in c)
    top = comment_text(top.replace("/*", "/**", 1))
    sections = []
    enums = []
    # Banner sections: /* ---- */ /* Title */ /* ---- */
    banner = re.compile(r"/\* -{10,} \*/\s*\n/\* (.*?)\s*\*/\s*\n/\* -{10,} \*/")
    # A doc comment and what follows it, up to the first ';'.
    # (A comment before anything else, e.g. a #define, matches nothing.)
    item = re.compile(r"(/\*\*(?!<).*?\*/)\s*\n(enum\s+\w+\s*\{.*?\};|(?:(?!/\*)[^;])*;)",
                      re.S)
    marks = [(m.start(), "banner", m) for m in banner.finditer(text)]
    marks += [(m.start(), "item", m) for m in item.finditer(text)]
    for _, kind, m in sorted(marks, key=lambda x: x[0]):
        if kind == "banner":
            sections.append((m.group(1), []))
            continue
        doc, decl = comment_text(m.group(1)), m.group(2)
        if decl.lstrip().startswith("enum"):
            body = decl
            members = re.findall(r"(RSHARE_\w+)\s*=\s*(-?\w+),?\s*/\*\*<\s*(.*?)\s*\*/", body)
            enums.append(Enum(re.search(r"enum\s+(\w+)", body).group(1), doc, members))
            continue
        fn = re.search(r"RSHARE_API\b(.*?\b(rshare_\w+)\s*\(.*)", decl, re.S)
        if fn:
            if not sections:
                sections.append(("Library", []))
            proto = re.sub(r"\s+", " ", fn.group(1)).strip()
            proto = proto.replace("( ", "(").replace(" )", ")")
            sections[-1][1].append(Function(fn.group(2), proto, doc))
    return top, [(t, fns) for t, fns in sections if fns], enums


def family_name(title, functions):
    """rshare_<word> for a section whose functions mostly share a first word
    (plurals folded: rshare_devices_count is a device function), else
    rshare_<first word of the title>."""
    words = [f.name[len("rshare_"):].split("_")[0] for f in functions]
    words = [w[:-1] if w.endswith("s") and w[:-1] in words else w for w in words]
    word, n = collections.Counter(words).most_common(1)[0]
    if n * 2 <= len(words):
        word = re.match(r"[A-Za-z]+", title).group(0).lower()
    return "rshare_" + word


def summary_of(title):
    """"Blobs (byte layout: abi/BLOB-FORMAT.md)" -> "blobs"."""
    s = re.split(r"[(:]", title)[0].strip()
    return s[0].lower() + s[1:] if s[1:2].islower() else s


def gen_section3(header, version, outdir):
    text = open(header, encoding="utf-8").read()
    top, sections, enums = parse_header(text)
    date = page_date(header)
    man3 = os.path.join(outdir, "man3")
    pages = []
    for title, fns in sections:
        pages.append((family_name(title, fns), title, fns))

    status_enum = [e for e in enums if e.name == "rshare_status"]
    other_enums = [e for e in enums if e.name != "rshare_status"]
    seealso = ["rshare"] + [p[0] for p in pages]

    def see_also(me):
        out = [".SH SEE ALSO"]
        refs = [r for r in seealso if r != me] + (["rshare"] if me != "rshare" else [])
        refs = list(dict.fromkeys(r for r in refs))
        out += [".BR %s (3)," % esc(r) for r in refs]
        out += [".BR rshare (1)"]
        return out

    def enum_table(e):
        out = paragraphs(e.doc)
        for name, value, doc in e.members:
            out += [".TP", "\\fB%s\\fP (%s)" % (esc(name), esc(value)), inline(doc)]
        return out

    for name, title, fns in pages:
        lines = th(name, 3, version, date)
        lines += [".SH NAME",
                  "%s \\- %s" % (", ".join(esc(f.name) for f in fns), esc(summary_of(title)))]
        lines += [".SH SYNOPSIS", ".nf", ".B #include <rshare/rshare.h>", ".PP"]
        lines += [esc(f.decl) for f in fns]
        lines += [".fi", ".PP",
                  "Link with \\fB\\-lrshare\\fP (\\fBpkg\\-config \\-\\-libs rshare\\fP, "
                  "or \\fBrshare::rshare\\fP of \\fBfind_package(rshare)\\fP).",
                  ".SH DESCRIPTION"]
        for f in fns:
            lines += [".SS %s()" % esc(f.name)]
            lines += paragraphs(f.doc)
        if name == "rshare_library" and status_enum:
            lines += [".SH STATUS CODES"] + enum_table(status_enum[0])
        lines += [".SH RETURN VALUE",
                  "Functions returning \\fBint\\fP return \\fBRSHARE_OK\\fP (0) or a negative "
                  "status (see \\fBrshare_library\\fP(3)); each function above lists its own. "
                  "Out parameters are written only on success. After a failure, "
                  "\\fBrshare_last_error\\fP() explains it for the calling thread."]
        lines += see_also(name)
        write(os.path.join(man3, name + ".3"), lines)
        for f in fns:  # one alias per function, as man-db and mandoc expect
            write(os.path.join(man3, f.name + ".3"), [".so man3/%s.3" % name])

    # The overview, rshare(3).
    lines = th("rshare", 3, version, date)
    lines += [".SH NAME", "rshare \\- share RDMA objects between processes through checked blobs",
              ".SH SYNOPSIS", ".nf", ".B #include <rshare/rshare.h>", ".fi", ".PP",
              "Link with \\fB\\-lrshare\\fP.", ".SH DESCRIPTION"]
    top = re.sub(r"^rshare: ", "", top)
    lines += paragraphs(top[0].upper() + top[1:])
    lines += [".SH FUNCTIONS"]
    for name, title, fns in pages:
        lines += [".TP", "\\fB%s\\fP(3): %s" % (esc(name), esc(summary_of(title))),
                  ", ".join("\\fB%s\\fP()" % esc(f.name) for f in fns)]
    lines += [".SH CONSTANTS"]
    for e in other_enums:
        lines += [".SS enum %s" % esc(e.name)] + enum_table(e)
    lines += see_also("rshare")
    write(os.path.join(man3, "rshare.3"), lines)


# ---- the command ----------------------------------------------------------------

def run_help(binary, *args):
    return subprocess.run([binary, *args, "--help"], check=True, capture_output=True,
                          text=True).stdout


def option_lines(block):
    """"  -d, --device=NAME   text" lines (continuations indented deeper) as
    [long name, roff, text], and the lines in no such form (kept verbatim)."""
    out, other = [], []
    for line in block.split("\n"):
        m = re.match(r"  (-\w, )?(--[\w-]+)(=\S+)?\s{2,}(.*)$", line)
        if m:
            short = "\\fB%s\\fP, " % esc(m.group(1)[:-2]) if m.group(1) else ""
            arg = "=\\fI%s\\fP" % esc(m.group(3)[1:]) if m.group(3) else ""
            out.append([m.group(2), short + "\\fB%s\\fP" % esc(m.group(2)) + arg, m.group(4)])
        elif line.startswith("   ") and out:
            out[-1][2] += " " + line.strip()
        elif line.strip():
            other.append(line)
    return out, other


def command_section(text):
    """A subcommand's --help ("usage: rshare NAME ARGS", a blank line, a
    paragraph, then "options:" lines) as roff; any other shape is kept
    verbatim, so that nothing a command says is lost."""
    first, _, rest = text.partition("\n")
    usage = first[len("usage: "):] if first.startswith("usage: ") else first
    prose, opts_text = [], []
    for para in rest.strip("\n").split("\n\n"):
        para_lines = [line for line in para.split("\n") if line.strip() != "options:"]
        if para_lines and not any(line.startswith(" ") for line in para_lines):
            prose.append(" ".join(" ".join(para_lines).split()))
        else:
            opts_text += para_lines
    lines = [".SS %s" % esc(usage)]
    for para in prose:
        lines += [".PP", inline(para)]
    opts, other = option_lines("\n".join(opts_text))
    for name, left, right in opts:
        if name == "--help":  # said once, above
            continue
        lines += [".TP", left, inline(right)]
    if other:
        lines += [".PP", ".nf"] + [esc(line) for line in other] + [".fi"]
    return lines


def gen_section1(binary, version, outdir):
    top = run_help(binary)
    date = page_date(binary)
    descr = top.split("\n\n")[1].strip()
    commands = re.findall(r"^  ([a-z][\w-]*)( [^ ].*?)?\s{2,}(\S.*)$",
                          top.split("commands:\n", 1)[1].split("\n\n")[0], re.M)
    lines = th("rshare", 1, version, date)
    lines += [".SH NAME", "rshare \\- " + esc(descr[0].lower() + descr[1:].rstrip(".")),
              ".SH SYNOPSIS", ".B rshare", ".I command", "[\\fIoptions\\fP]", ".br",
              ".B rshare", "\\fIcommand\\fP \\fB\\-\\-help\\fP",
              ".SH DESCRIPTION", inline(descr),
              ".PP",
              "Every command takes \\fB\\-h\\fP, \\fB\\-\\-help\\fP (its usage on standard "
              "output, exit status 0). Options take their value as \\fB\\-\\-opt value\\fP "
              "or \\fB\\-\\-opt=value\\fP.",
              ".SH COMMANDS"]
    for name, _args, _summary in commands:
        lines += command_section(run_help(binary, name))
    lines += [".SH EXIT STATUS",
              ".TP", "0", "Success.",
              ".TP", "1", "Failure: the status name and the library's explanation are printed "
              "on standard error. A write error on standard output is a failure too.",
              ".TP", "2", "Usage error: an unknown option (named), a missing or bad value, "
              "a wrong number of arguments.",
              ".PP",
              "The broker commands (\\fBserve\\fP, \\fBshares\\fP, \\fBpublish\\fP, "
              "\\fBattach\\fP, \\fBwithdraw\\fP) tell the causes a script acts on apart:",
              ".TP", "3", "No broker: nothing listens on the socket (\\fBRSHARE_E_IO\\fP "
              "with \\fBENOENT\\fP or \\fBECONNREFUSED\\fP).",
              ".TP", "4", "Not found: no share of that name (\\fBattach\\fP without "
              "\\fB\\-\\-timeout\\fP, \\fBwithdraw\\fP).",
              ".TP", "5", "Timeout: \\fBattach \\-\\-timeout\\fP passed before the name "
              "was published.",
              ".TP", "6", "Refused: not allowed (\\fBRSHARE_E_PERM\\fP): the share's policy "
              "does not list this uid or its groups, or this uid may not withdraw it.",
              ".TP", "7", "Busy: the name is taken (\\fBpublish\\fP), or a live broker "
              "already serves the socket (\\fBserve\\fP).",
              ".PP",
              "\\fBrshare attach\\fP \\fINAME\\fP \\fB\\-\\-\\fP \\fICMD\\fP becomes \\fICMD\\fP: "
              "its exit status is \\fICMD\\fP's, or 127 when \\fICMD\\fP is not found, "
              "126 when it is found but cannot be run.",
              ".SH ENVIRONMENT",
              ".TP", ".B RSHARE_SIM=0",
              "Hide the simulated device \\fBsim0\\fP.",
              ".TP", ".B RSHARE_BROKER",
              "The broker's socket when \\fB\\-\\-socket\\fP is not given (\\fBserve\\fP, "
              "\\fBshares\\fP, \\fBpublish\\fP, \\fBattach\\fP, \\fBwithdraw\\fP); else "
              "\\fI$XDG_RUNTIME_DIR/rshare/broker.sock\\fP, else "
              "\\fI/run/rshare/broker.sock\\fP for root and "
              "\\fI/tmp/rshare\\-$UID/broker.sock\\fP otherwise.",
              ".TP", ".B NOTIFY_SOCKET",
              "Set by systemd for a \\fBType=notify\\fP service: \\fBserve\\fP sends "
              "\\fBREADY=1\\fP there once it listens and \\fBSTOPPING=1\\fP when it "
              "stops (the sd_notify protocol; no libsystemd needed).",
              ".TP", ".B LISTEN_PID\\fR, \\fPLISTEN_FDS",
              "systemd socket activation: \\fBserve\\fP without \\fB\\-\\-socket\\fP "
              "serves the passed socket (fd 3).",
              ".SH FILES",
              ".TP", ".I lib/systemd/system/rshare.socket\\fR, \\fPrshare.service",
              "The system broker on \\fI/run/rshare/broker.sock\\fP, started on demand: "
              "\\fBsystemctl enable \\-\\-now rshare.socket\\fP; other users' clients set "
              "\\fBRSHARE_BROKER=/run/rshare/broker.sock\\fP.",
              ".TP", ".I lib/systemd/user/rshare.socket\\fR, \\fPrshare.service",
              "A user's broker on \\fI$XDG_RUNTIME_DIR/rshare/broker.sock\\fP (the default "
              "endpoint): \\fBsystemctl \\-\\-user enable \\-\\-now rshare.socket\\fP.",
              ".TP", ".I share/bash\\-completion/completions/rshare",
              "Bash completion of commands, options and device names.",
              ".SH SEE ALSO", ".BR rshare (3)"]
    write(os.path.join(outdir, "man1", "rshare.1"), lines)


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("section1", "section3"):
        sys.exit(__doc__)
    what, source, version, outdir = sys.argv[1:]
    sub = os.path.join(outdir, "man1" if what == "section1" else "man3")
    shutil.rmtree(sub, ignore_errors=True)  # no stale page of a removed function
    os.makedirs(sub)
    if what == "section3":
        gen_section3(source, version, outdir)
    else:
        gen_section1(source, version, outdir)


if __name__ == "__main__":
    main()
