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

With --ledger, instead, a 1.2 peer's hardware context with its ledger
against the real 1.1 library, built from git history (commit ad8bc7f, the
last tree before RSHARE_1.2), both on the stand-in rdma-core (tests/hw),
as docs/hardware.md ("A 1.2 peer and a 1.1 library") says:

 5. A context with its ledger sent over a channel (two fds) is refused by
    the 1.1 rshare_channel_recv: RSHARE_E_PROTOCOL ("exactly 1 expected"),
    no fd left behind; the next message, a context without the ledger
    (one fd), is received whole and a PD is allocated on it (readable by
    1.1). And the other way: a 1.1 peer's context (one fd) and PD blob are
    read by 1.2 as before (bare level, no ledger; the blob imports).
 6. A PD blob with the ledger serial (flag LEDGER, 52 bytes) given to the
    1.1 rshare_pd_import is RSHARE_E_BLOB_CORRUPT by 1.1's length check
    ("blob fields need 44 bytes, length is 52"), nothing imported.
 7. A 1.1 rshare_broker_attach of a 1.2 broker's share of a context with a
    ledger is RSHARE_E_PROTOCOL ("broker reply carried 2 fds"), no fd left
    behind, nothing adopted.

  test_history.py --source-dir SRC --lib BUILD/lib/librshare.so.1 --work DIR
  test_history.py --ledger --standin BUILD/tests/hw/standin --cli BUILD/bin/rshare ...

Exit 0 = pass, 1 = fail, 77 = skipped (no git history of commit 9baa67d, or
with --ledger ad8bc7f, in this clone: fetch it with `git fetch --unshallow`).
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
# The last tree before RSHARE_1.2: the parent of the first commits that
# added the node (git log -S'RSHARE_1.2 {' -- abi/rshare.map).
V11 = "ad8bc7f"
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


def build_old(src, work, commit, label):
    """The library of commit (version label) from git history: git archive,
    configure the tree with no optional parts, build the rshare target
    alone."""
    tree, build = work / ("src-" + label), work / ("build-" + label)
    lib = build / "lib" / "librshare.so.1"
    if lib.exists():
        return tree, lib
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(src), "archive", "--format=tar", commit],
                             capture_output=True, check=True, timeout=120)
    tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(tree)
    res = run(["cmake", "-S", str(tree), "-B", str(build), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DRSHARE_PARTS=", "-DRSHARE_BINDINGS=OFF"])
    if res.returncode == 0:
        res = run(["cmake", "--build", str(build), "--target", "rshare", "-j2"])
    if res.returncode != 0:
        raise SystemExit("building the %s library failed:\n%s%s" % (label, res.stdout, res.stderr))
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


# Sections 5 to 7 run on the stand-in rdma-core, every process pointed at
# the same stand-in (and the same device state) as hw_suite is.
LEDGER_COMMON = r"""
import ctypes, json, os, sys
lib = ctypes.CDLL(sys.argv[1])
lib.rshare_last_error.restype = ctypes.c_char_p
lib.rshare_channel_send.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rshare_pd_import.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
lib.rshare_broker_attach.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                     ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
def ok(st, what):
    if st != 0:
        sys.exit("%s: status %d: %s" % (what, st, lib.rshare_last_error().decode()))
def nfds():
    return len(os.listdir("/proc/self/fd"))
def caps(dev):
    c = ctypes.c_uint32()
    ok(lib.rshare_device_caps(dev, ctypes.byref(c)), "rshare_device_caps")
    return c.value
def opened(name):
    dev = ctypes.c_void_p()
    ok(lib.rshare_device_open(name, ctypes.byref(dev)), "rshare_device_open")
    return dev
"""

# The 1.2 peer: a context with its ledger, the same context imported from
# its bare fd (no ledger), a PD of the first and its blob; both contexts
# go over the channel, the ledger one first.
LEDGER_SEND = LEDGER_COMMON + r"""
sock = int(sys.argv[2])
dev = opened(b"mlx5_sim0")
fd, bare, pd = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
ok(lib.rshare_device_fd(dev, ctypes.byref(fd)), "rshare_device_fd")
ok(lib.rshare_device_import(fd, ctypes.byref(bare)), "rshare_device_import")
ok(lib.rshare_pd_alloc(dev, ctypes.byref(pd)), "rshare_pd_alloc")
blob, n = ctypes.create_string_buffer(128), ctypes.c_size_t()
ok(lib.rshare_pd_export(pd, blob, ctypes.c_size_t(128), ctypes.byref(n)), "rshare_pd_export")
ok(lib.rshare_channel_send(sock, dev, b"ledger", 6), "send the ledger context")
ok(lib.rshare_channel_send(sock, bare, b"bare", 4), "send the bare context")
print(json.dumps({"ledger_caps": caps(dev) & 32, "bare_caps": caps(bare) & 32,
                  "blob": blob.raw[:n.value].hex()}))
"""

# The 1.1 library: both messages (5), then the ledger PD blob (6). The
# hardware provider is loaded before counting fds (its first open).
LEDGER_RECV_OLD = LEDGER_COMMON + r"""
sock, blob = int(sys.argv[2]), bytes.fromhex(sys.argv[3])
lib.rshare_version.restype = ctypes.c_char_p
out = {"version": lib.rshare_version().decode()}
lib.rshare_device_close(opened(b"mlx5_sim0"))
dev, n, buf = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.create_string_buffer(64)
before = nfds()
out["st1"] = lib.rshare_channel_recv(sock, ctypes.byref(dev), buf, ctypes.c_size_t(64), ctypes.byref(n))
out["msg1"] = lib.rshare_last_error().decode()
out["left1"] = nfds() - before
out["st2"] = lib.rshare_channel_recv(sock, ctypes.byref(dev), buf, ctypes.c_size_t(64), ctypes.byref(n))
out["payload2"] = buf.raw[:n.value].decode()
if out["st2"] == 0:
    name = ctypes.create_string_buffer(64)
    ok(lib.rshare_device_name(dev, name, ctypes.c_size_t(64), ctypes.byref(n)), "rshare_device_name")
    out["name2"] = name.value.decode()
    pd = ctypes.c_void_p()
    out["alloc2"] = lib.rshare_pd_alloc(dev, ctypes.byref(pd))
    ok(lib.rshare_pd_free(pd) if out["alloc2"] == 0 else 0, "rshare_pd_free")
    ok(lib.rshare_device_close(dev), "close the received context")
target, imp = opened(b"mlx5_sim0"), ctypes.c_void_p()
out["st3"] = lib.rshare_pd_import(target, blob, len(blob), ctypes.byref(imp))
out["msg3"] = lib.rshare_last_error().decode()
out["imp3"] = imp.value
ok(lib.rshare_device_close(target), "close the import's context")
print(json.dumps(out))
"""

# Section 5, the other way: the 1.1 library sends its mlx5 context (one fd)
# with a PD blob as the payload; this library receives it (bare level: no
# ledger) and imports the PD.
OLD_SEND = LEDGER_COMMON + r"""
sock = int(sys.argv[2])
dev, pd = opened(b"mlx5_sim0"), ctypes.c_void_p()
ok(lib.rshare_pd_alloc(dev, ctypes.byref(pd)), "rshare_pd_alloc")
blob, n = ctypes.create_string_buffer(128), ctypes.c_size_t()
ok(lib.rshare_pd_export(pd, blob, ctypes.c_size_t(128), ctypes.byref(n)), "rshare_pd_export")
ok(lib.rshare_channel_send(sock, dev, blob.raw[:n.value], n.value), "send the context")
"""
NEW_RECV = LEDGER_COMMON + r"""
sock = int(sys.argv[2])
dev, n, buf = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.create_string_buffer(128)
ok(lib.rshare_channel_recv(sock, ctypes.byref(dev), buf, ctypes.c_size_t(128), ctypes.byref(n)),
   "rshare_channel_recv")
imp = ctypes.c_void_p()
st = lib.rshare_pd_import(dev, buf.raw[:n.value], n.value, ctypes.byref(imp))
print(json.dumps({"caps": caps(dev) & 32, "blob_len": n.value, "import": st,
                  "msg": lib.rshare_last_error().decode()}))
"""

# Section 7: a broker client (1.1 attach refused, 1.2 attach for contrast).
LEDGER_ATTACH = LEDGER_COMMON + r"""
endpoint, name = sys.argv[2].encode(), sys.argv[3].encode()
lib.rshare_device_close(opened(b"mlx5_sim0"))
dev, n, buf = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.create_string_buffer(1024)
before = nfds()
st = lib.rshare_broker_attach(endpoint, name, 5000, ctypes.byref(dev), buf, 1024, ctypes.byref(n))
out = {"st": st, "msg": lib.rshare_last_error().decode(), "left": nfds() - before,
       "dev": dev.value}
if st == 0:
    out["caps"] = caps(dev) & 32
    ok(lib.rshare_device_close(dev), "close the attached context")
print(json.dumps(out))
"""


def run_json(cmd, what, **kw):
    """Run a section's program; its one line of JSON, or None (failure
    said)."""
    import json
    res = run(cmd, **kw)
    if res.returncode != 0:
        print("FAIL %s: exit %d: %s%s" % (what, res.returncode, res.stdout, res.stderr))
        return None
    return json.loads(res.stdout)


def pick(d, *keys):
    return {k: d.get(k) for k in keys}


def ledger_main(a, expect):
    """Sections 5 to 7: a 1.2 hardware context with its ledger (stand-in)
    against the 1.1 library built from V11."""
    import signal
    import socket
    _, lib11 = build_old(a.source_dir, a.work, V11, "1.1")
    lib12 = a.lib.resolve()
    state = a.work / "standin-device-state"
    if state.exists():
        state.unlink()
    env = dict(os.environ, RSHARE_LIBIBVERBS=str(a.standin / "libibverbs.so.1"),
               RSHARE_LIBMLX5=str(a.standin / "libmlx5.so.1"), STANDIN_DEVICE_STATE=str(state))

    # 5 and 6: the channel, then the blob.
    s0, s1 = socket.socketpair()
    sent = run_json([sys.executable, "-c", LEDGER_SEND, str(lib12), str(s0.fileno())],
                    "the 1.2 peer sends", pass_fds=[s0.fileno()], env=env)
    expect(sent is not None and sent["ledger_caps"] and not sent["bare_caps"],
           "1.2: the opened mlx5 context has the ledger, the one imported from its fd not (%s)"
           % pick(sent or {}, "ledger_caps", "bare_caps"))
    blob = bytes.fromhex(sent["blob"]) if sent else b""
    expect(len(blob) == 52 and blob[7] == 1,
           "1.2: the PD blob carries the ledger serial (flag LEDGER, 52 bytes: %s)" % blob.hex())
    got = run_json([sys.executable, "-c", LEDGER_RECV_OLD, str(lib11), str(s1.fileno()),
                    blob.hex()], "the 1.1 library receives", pass_fds=[s1.fileno()], env=env)
    s0.close()
    s1.close()
    got = got or {}
    expect(got.get("version", "").startswith("1.1."),
           "the library built from %s is 1.1 (%s)" % (V11, got.get("version")))
    expect(got.get("st1") == -15 and "exactly 1 expected" in got.get("msg1", "")
           and got.get("left1") == 0,
           "1.1 refuses a context with its ledger from the channel: RSHARE_E_PROTOCOL, "
           "no fd left behind (%s)" % pick(got, "st1", "msg1", "left1"))
    expect(got.get("st2") == 0 and got.get("payload2") == "bare" and got.get("name2") == "mlx5_sim0"
           and got.get("alloc2") == 0,
           "1.1 then receives the next message, a context without the ledger, whole, and "
           "allocates a PD on it (%s)" % pick(got, "st2", "payload2", "name2", "alloc2"))
    expect(got.get("st3") == -8 and "blob fields need 44 bytes, length is 52" in got.get("msg3", "")
           and not got.get("imp3"),
           "1.1 refuses a PD blob with the ledger serial: RSHARE_E_BLOB_CORRUPT by its length "
           "check, nothing imported (%s)" % pick(got, "st3", "msg3", "imp3"))

    # 5, the other way: a 1.1 peer's context and PD blob, read by 1.2.
    s0, s1 = socket.socketpair()
    res = run([sys.executable, "-c", OLD_SEND, str(lib11), str(s0.fileno())],
              pass_fds=[s0.fileno()], env=env)
    expect(res.returncode == 0, "the 1.1 peer sends its context (%s)" % res.stderr.strip())
    back = run_json([sys.executable, "-c", NEW_RECV, str(lib12), str(s1.fileno())],
                    "1.2 receives the 1.1 context", pass_fds=[s1.fileno()], env=env) or {}
    s0.close()
    s1.close()
    expect(back.get("caps") == 0 and back.get("blob_len") == 44 and back.get("import") == 0,
           "1.2 reads a 1.1 peer's context (bare level: no ledger) and imports its 44-byte "
           "PD blob (%s)" % back)

    # 7: a 1.2 broker holding a share of a context with its ledger.
    sock = a.work / "broker.sock"
    r, w = os.pipe()
    serve = subprocess.Popen([str(a.cli), "serve", "--socket", str(sock), "--ready-fd", str(w)],
                             pass_fds=[w], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    os.close(w)
    try:
        with os.fdopen(r) as ready:
            line = ready.readline()
        expect(line.startswith("ready"), "the 1.2 broker listens (%r)" % line)
        res = run([str(a.cli), "publish", "--socket", str(sock), "--device", "mlx5_sim0", "--pd",
                   "--persistent", "ledger-share"], env=env)
        expect(res.returncode == 0, "1.2 publishes a PD of mlx5_sim0 (%s)" % res.stderr.strip())
        new = run_json([sys.executable, "-c", LEDGER_ATTACH, str(lib12), str(sock), "ledger-share"],
                       "the 1.2 attach", env=env) or {}
        expect(new.get("st") == 0 and new.get("caps"),
               "1.2 attaches the share with its ledger (%s)" % new)
        old = run_json([sys.executable, "-c", LEDGER_ATTACH, str(lib11), str(sock), "ledger-share"],
                       "the 1.1 attach", env=env) or {}
        expect(old.get("st") == -15 and "broker reply carried 2 fds" in old.get("msg", "")
               and old.get("left") == 0 and not old.get("dev"),
               "1.1 refuses the broker's share of a context with its ledger: RSHARE_E_PROTOCOL, "
               "no fd left behind, nothing adopted (%s)" % old)
    finally:
        serve.send_signal(signal.SIGTERM)
        out, err = serve.communicate(timeout=60)
    expect(serve.returncode == 0, "the broker stops cleanly (%s)" % err.strip())
    if state.exists():
        state.unlink()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True, type=Path)
    ap.add_argument("--lib", required=True, type=Path)
    ap.add_argument("--header-dir", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--ledger", action="store_true",
                    help="sections 5-7: a 1.2 ledger context against the 1.1 library")
    ap.add_argument("--standin", type=Path, help="the stand-in rdma-core's folder (--ledger)")
    ap.add_argument("--cli", type=Path, help="this build's rshare command (--ledger)")
    a = ap.parse_args()
    if a.ledger and not (a.standin and a.cli):
        ap.error("--ledger needs --standin and --cli")
    commit, label = (V11, "1.1") if a.ledger else (V10, "1.0")
    if not shutil.which("git") or run(["git", "-C", str(a.source_dir), "cat-file", "-e",
                                       commit + "^{commit}"]).returncode != 0:
        print("SKIPPED: git history unavailable: commit %s (the %s tree) is not in %s; "
              "a shallow clone needs `git fetch --unshallow`" % (commit, label, a.source_dir))
        return SKIP
    a.work.mkdir(parents=True, exist_ok=True)
    failures = []

    def expect(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    if a.ledger:
        ledger_main(a, expect)
        print("%d failure(s)" % len(failures))
        return 1 if failures else 0

    tree, lib10 = build_old(a.source_dir, a.work, V10, "1.0")
    lib11 = a.lib.resolve()

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
