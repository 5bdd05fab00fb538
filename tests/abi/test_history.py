#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The version node proven in both directions against the real 1.0 library,
built from git history (commit 9baa67d, the last 1.0 tree):

 1. A program built against the 1.0 header and library runs unchanged
    against this library.
 2. A program that uses a 1.1 function names RSHARE_1.1 in its version needs,
    and on the 1.0 library fails at load time with the loader's message.
 3. Blobs cross between the versions: PD blobs either way; a well-formed blob
    of a 1.1 kind (MR, DM) is RSHARE_E_BLOB_CORRUPT ("kind N is unknown") on
    1.0 and decodes on 1.1; an unknown kind is RSHARE_E_BLOB_KIND on 1.1
    (abi/BLOB-FORMAT.md, "Blobs of a kind the library does not know").
 4. A channel message with extra fds (rshare_channel_sendv, since 1.2)
    fails cleanly on the old library: RSHARE_E_PROTOCOL, the message and its
    fds dropped, the next message received whole.

  test_history.py --source-dir SRC --lib BUILD/lib/librshare.so.1 --work DIR

Exit 0 = pass, 1 = fail, 77 = skipped (no git history of commit 9baa67d in
this clone: fetch it with `git fetch --unshallow`).
"""

import argparse
import os
import shutil
import io
import subprocess
import sys
import tarfile
from pathlib import Path

V10 = "9baa67d"
SKIP = 77
HERE = Path(__file__).resolve().parent

# A 1.0 program: only 1.0 names, written against the 1.0 header.
PROGRAM_10 = r"""
#include <stdio.h>
#include <string.h>
#include <rshare/rshare.h>
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "failed: %s\n", #c); return 1; } } while (0)
int main(void)
{
	rshare_device *dev; rshare_pd *pd, *imp; rshare_var *var;
	unsigned char blob[RSHARE_BLOB_MAX]; size_t len; uint32_t h1, h2; int kind;
	CHECK(RSHARE_VERSION_MINOR == 0);
	CHECK(rshare_device_open("sim0", &dev) == RSHARE_OK);
	CHECK(rshare_pd_alloc(dev, &pd) == RSHARE_OK);
	CHECK(rshare_pd_export(pd, blob, sizeof blob, &len) == RSHARE_OK && len == 44);
	CHECK(rshare_blob_kind(blob, len, &kind) == RSHARE_OK && kind == RSHARE_KIND_PD);
	CHECK(rshare_pd_import(dev, blob, len, &imp) == RSHARE_OK);
	CHECK(rshare_pd_handle(pd, &h1) == RSHARE_OK && rshare_pd_handle(imp, &h2) == RSHARE_OK);
	CHECK(h1 == h2);
	CHECK(rshare_var_alloc(dev, 0, &var) == RSHARE_OK);
	CHECK(rshare_device_close(dev) == RSHARE_E_BUSY);
	CHECK(rshare_pd_unimport(imp) == RSHARE_OK && rshare_pd_free(pd) == RSHARE_OK);
	CHECK(rshare_pd_import(dev, blob, len, &imp) == RSHARE_E_NOT_FOUND);
	CHECK(rshare_var_free(var) == RSHARE_OK && rshare_device_close(dev) == RSHARE_OK);
	CHECK(rshare_pd_free(pd) == RSHARE_E_STALE);
	printf("1.0 program ok on %s\n", rshare_version());
	return 0;
}
"""

# A 1.1 program: one 1.1 function is enough to need RSHARE_1.1.
PROGRAM_11 = r"""
#include <stdio.h>
#include <rshare/rshare.h>
int main(void)
{
	if (rshare_version_number() < RSHARE_VERSION_NUMBER) {
		fprintf(stderr, "library older than the header\n");
		return 1;
	}
	printf("1.1 program ok on %s\n", rshare_version());
	return 0;
}
"""

# Run in a child process per library (both are librshare.so.1: one process
# can load only one of them): each line is "name status" for a blob.
BLOB_PROBE = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.rshare_last_error.restype = ctypes.c_char_p
for arg in sys.argv[2:]:
    name, hexblob = arg.split("=")
    b = bytes.fromhex(hexblob)
    kind = ctypes.c_int(-1)
    st = lib.rshare_blob_kind(b, len(b), ctypes.byref(kind))
    print(name, st, kind.value, lib.rshare_last_error().decode())
"""


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def make_blob(kind, fields):
    """A well-formed format-1 blob (abi/BLOB-FORMAT.md) of kind with the kind
    fields given as bytes, on the simulated provider."""
    size = 40 + len(fields) + 4
    head = b"RSHB" + bytes([1, kind, 2, 0]) + size.to_bytes(2, "little") + (0).to_bytes(2, "little")
    head += (7).to_bytes(4, "little") + (0x02C0DE5100000030).to_bytes(8, "little")
    head += (0x1234).to_bytes(8, "little") + (3).to_bytes(8, "little")
    body = head + fields
    return body + crc32c(body).to_bytes(4, "little")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def build_10(src, work):
    """The 1.0 library from commit V10: git archive, configure the tree with
    no optional parts, build the rshare target alone."""
    tree, build = work / "src-1.0", work / "build-1.0"
    lib = build / "lib" / "librshare.so.1"
    if lib.exists():
        return tree, lib
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(src), "archive", "--format=tar", V10],
                             capture_output=True, check=True, timeout=120)
    tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(tree)
    res = run(["cmake", "-S", str(tree), "-B", str(build), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DRSHARE_PARTS=", "-DRSHARE_BINDINGS=OFF"])
    if res.returncode == 0:
        res = run(["cmake", "--build", str(build), "--target", "rshare", "-j2"])
    if res.returncode != 0:
        raise SystemExit("building the 1.0 library failed:\n" + res.stdout + res.stderr)
    return tree, lib


def compile_program(text, name, include, libdir, work):
    c, exe = work / (name + ".c"), work / name
    c.write_text(text)
    res = run(["cc", "-std=c99", "-Wall", "-Werror", "-I", str(include), str(c), "-o", str(exe),
               "-L", str(libdir), "-l:librshare.so.1"])
    if res.returncode != 0:
        raise SystemExit("compiling %s failed:\n%s" % (name, res.stderr))
    return exe


def version_needs(exe):
    out = run(["readelf", "-V", "--wide", str(exe)], check=True).stdout
    return {w for w in out.split() if w.startswith("RSHARE_")}


# Section 4: this library sends a message with an extra fd, then the old
# one a plain message (a sim0 table of its own layout); the old library
# receives both. Separate processes: one soname each.
SEND = r"""
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1]); sock = int(sys.argv[2])
lib.rshare_channel_send.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
dev = ctypes.c_void_p()
assert lib.rshare_device_open(b"sim0", ctypes.byref(dev)) == 0
if sys.argv[3] == "v":
    lib.rshare_channel_sendv.argtypes = [ctypes.c_int, ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_int), ctypes.c_size_t,
                                         ctypes.c_char_p, ctypes.c_size_t]
    r, w = os.pipe()
    assert lib.rshare_channel_sendv(sock, dev, (ctypes.c_int * 1)(r), 1, b"with an fd", 10) == 0
else:
    assert lib.rshare_channel_send(sock, dev, b"plain", 5) == 0
"""
RECV_OLD = r"""
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1]); sock = int(sys.argv[2])
lib.rshare_last_error.restype = ctypes.c_char_p
dev, n, buf = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.create_string_buffer(64)
before = len(os.listdir("/proc/self/fd"))
st1 = lib.rshare_channel_recv(sock, ctypes.byref(dev), buf, ctypes.c_size_t(64), ctypes.byref(n))
msg = lib.rshare_last_error().decode()
leaked = len(os.listdir("/proc/self/fd")) - before
st2 = lib.rshare_channel_recv(sock, ctypes.byref(dev), buf, ctypes.c_size_t(64), ctypes.byref(n))
print(st1, leaked, st2, buf.raw[:n.value].decode(), msg)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True, type=Path)
    ap.add_argument("--lib", required=True, type=Path)
    ap.add_argument("--header-dir", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    a = ap.parse_args()
    if not shutil.which("git") or run(["git", "-C", str(a.source_dir), "cat-file", "-e",
                                       V10 + "^{commit}"]).returncode != 0:
        print("SKIPPED: git history unavailable: commit %s (the 1.0 tree) is not in %s; "
              "a shallow clone needs `git fetch --unshallow`" % (V10, a.source_dir))
        return SKIP
    a.work.mkdir(parents=True, exist_ok=True)
    tree, lib10 = build_10(a.source_dir, a.work)
    lib11 = a.lib.resolve()
    failures = []

    def expect(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    def env_for(lib):
        return dict(os.environ, LD_LIBRARY_PATH=str(lib.parent))

    # 1. The 1.0 program, built against the 1.0 header and library.
    p10 = compile_program(PROGRAM_10, "program-1.0", tree / "capi" / "include", lib10.parent, a.work)
    expect(version_needs(p10) == {"RSHARE_1.0"}, "a 1.0 program needs RSHARE_1.0 only")
    for lib, label in ((lib10, "1.0"), (lib11, "1.2")):
        res = run([str(p10)], env=env_for(lib))
        expect(res.returncode == 0 and ("on %s." % label) in res.stdout,
               "the 1.0 program runs unchanged on the %s library (%s)"
               % (label, (res.stdout + res.stderr).strip()))

    # 2. The 1.1 program: RSHARE_1.1 in its needs, refused by the 1.0 loader.
    p11 = compile_program(PROGRAM_11, "program-1.1", a.header_dir, lib11.parent, a.work)
    expect("RSHARE_1.1" in version_needs(p11), "a 1.1 program needs RSHARE_1.1")
    res = run([str(p11)], env=env_for(lib11))
    expect(res.returncode == 0, "the 1.1 program runs on 1.1 (%s)" % res.stderr.strip())
    res = run([str(p11)], env=env_for(lib10))
    expect(res.returncode != 0 and "version `RSHARE_1.1' not found" in res.stderr
           and "library older" not in res.stderr,
           "the 1.1 program fails at load time on 1.0 with the loader's message (%s)"
           % res.stderr.strip())

    # 3. Blobs across versions.
    pd = make_blob(1, b"")
    mr = make_blob(3, bytes(40))
    dm = make_blob(4, (4096).to_bytes(8, "little"))
    future = make_blob(9, bytes(8))
    args = ["pd=" + pd.hex(), "mr=" + mr.hex(), "dm=" + dm.hex(), "future=" + future.hex()]

    def probe(lib):
        res = run([sys.executable, "-c", BLOB_PROBE, str(lib)] + args)
        if res.returncode != 0:
            raise SystemExit("blob probe failed on %s:\n%s" % (lib, res.stderr))
        out = {}
        for line in res.stdout.splitlines():
            name, st, kind, msg = line.split(" ", 3)
            out[name] = (int(st), int(kind), msg)
        return out

    old, new = probe(lib10), probe(lib11)
    expect(old["pd"][:2] == (0, 1) and new["pd"][:2] == (0, 1), "a PD blob reads on 1.0 and 1.1")
    for name, kind in (("mr", 3), ("dm", 4), ("future", 9)):
        st, _, msg = old[name]
        expect(st == -8 and ("kind %d is unknown" % kind) in msg,
               "1.0 answers RSHARE_E_BLOB_CORRUPT for a well-formed kind-%d blob (%d: %s)"
               % (kind, st, msg))
    expect(new["mr"][:2] == (0, 3) and new["dm"][:2] == (0, 4), "1.1 reads MR and DM blobs")
    st, _, msg = new["future"]
    expect(st == -10 and "kind 9 is unknown" in msg,
           "1.1 answers RSHARE_E_BLOB_KIND for a well-formed blob of an unknown kind (%d: %s)"
           % (st, msg))
    damaged = bytearray(mr)
    damaged[5] = 9  # kind byte damaged: the checksum catches it first
    res = run([sys.executable, "-c", BLOB_PROBE, str(lib11), "damaged=" + bytes(damaged).hex()])
    expect(res.stdout.split()[1] == "-8", "1.1: a damaged kind byte is RSHARE_E_BLOB_CORRUPT")

    # 4. A 1.2 message with an extra fd, received by the old library.
    import socket
    s0, s1 = socket.socketpair()
    for lib, mode in ((lib11, "v"), (lib10, "plain")):
        res = run([sys.executable, "-c", SEND, str(lib), str(s0.fileno()), mode],
                  pass_fds=[s0.fileno()])
        expect(res.returncode == 0, "%s sends (%s)" % (lib, res.stderr.strip()))
    res = run([sys.executable, "-c", RECV_OLD, str(lib10), str(s1.fileno())],
              pass_fds=[s1.fileno()])
    got = res.stdout.split(" ", 4)
    expect(res.returncode == 0 and got[:4] == ["-15", "0", "0", "plain"],
           "1.0 refuses a message with an extra fd (RSHARE_E_PROTOCOL, no fd leaked) and "
           "receives the next one whole (%s%s)" % (res.stdout.strip(), res.stderr.strip()))
    s0.close()
    s1.close()

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
