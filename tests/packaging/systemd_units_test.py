# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The shipped systemd units (packaging/systemd), as installed: the system
and user rshare.socket + rshare.service are there, systemd-analyze accepts
them, ExecStart names the installed command, and that command, started the
way systemd starts it (the unit's listening socket as fd 3, $LISTEN_PID,
$LISTEN_FDS, $NOTIFY_SOCKET), serves the socket and reports READY=1.

usage: systemd_units_test.py BUILD_DIR"""

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile


def unit_value(path, key):
    with open(path) as f:
        found = re.findall(r"^%s=(.*)$" % key, f.read(), re.M)
    assert len(found) == 1, (path, key, found)
    return found[0]


def main():
    build = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="rshare-units-")
    try:
        prefix = os.path.join(tmp, "prefix")
        for component in ("lib", "bin"):
            subprocess.run(["cmake", "--install", build, "--prefix", prefix,
                            "--component", component], check=True, stdout=subprocess.DEVNULL)
        for scope, listen in (("system", "/run/rshare/broker.sock"),
                              ("user", "%t/rshare/broker.sock")):
            units = os.path.join(prefix, "lib", "systemd", scope)
            sock_unit = os.path.join(units, "rshare.socket")
            svc_unit = os.path.join(units, "rshare.service")
            assert unit_value(sock_unit, "ListenSequentialPacket") == listen
            assert unit_value(svc_unit, "Type") == "notify"
            cmd = shlex.split(unit_value(svc_unit, "ExecStart"))
            assert cmd == [os.path.join(prefix, "bin", "rshare"), "serve"], cmd
            assert os.access(cmd[0], os.X_OK), cmd
            if shutil.which("systemd-analyze"):
                subprocess.run(["systemd-analyze", "verify", "--man=no", sock_unit, svc_unit],
                               check=True)
            else:
                print("systemd-analyze not installed: unit syntax not verified")
            activate(cmd, os.path.join(tmp, scope + ".sock"), os.path.join(tmp, "notify"))
            print(scope, "units: ok")
    finally:
        shutil.rmtree(tmp)


def activate(cmd, path, notify_path):
    """Run cmd as systemd would for the socket unit, at path instead of the
    unit's own (which needs root and a running systemd)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(10)
    copied = listener.fileno() != 3  # fd 3 may be free, and then be the listener
    if copied:
        os.dup2(listener.fileno(), 3, inheritable=True)
    env = dict(os.environ, LISTEN_FDS="1", NOTIFY_SOCKET=notify_path)
    env.pop("RSHARE_BROKER", None)
    # $LISTEN_PID is the pid of the process that execs the command.
    proc = subprocess.Popen(["sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh", *cmd], env=env,
                            pass_fds=(3,), stderr=subprocess.DEVNULL)
    if copied:
        os.close(3)
    try:
        ready = notify.recv(4096).decode()
        assert "READY=1" in ready.split("\n") and f"STATUS=serving {path}" in ready, ready
        out = subprocess.run([cmd[0], "shares", "--json", "--socket", path], check=True,
                             capture_output=True, text=True).stdout
        assert out.strip() == "[]", out
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        listener.close()
        notify.close()
        os.unlink(notify_path)


if __name__ == "__main__":
    main()
