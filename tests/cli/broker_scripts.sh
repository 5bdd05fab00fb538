#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The broker as shell scripts and systemd use it (rshare(1)):
#  - `rshare serve --ready-fd 3 3>fifo & read line <fifo; rshare shares`
#    works 100 times out of 100, and each clean stop removes the socket
#    and its lock file;
#  - with $NOTIFY_SOCKET (a path or an abstract "@name") serve sends
#    READY=1 (and its MAINPID) once listening, STOPPING=1 when stopping;
#  - every documented exit status: 0, 2 usage, 3 no broker, 4 not found,
#    5 timeout, 6 refused (another uid; needs root to switch users), 7 busy.
# usage: broker_scripts.sh RSHARE_BINARY
set -u
RSHARE=$1
dir=$(mktemp -d /tmp/rshare-cli-XXXXXX)
chmod 755 "$dir"
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$dir"' EXIT
export RSHARE_BROKER="$dir/b.sock"
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect STATUS WHAT COMMAND...: COMMAND must exit with STATUS.
expect() {
	want=$1 what=$2
	shift 2
	"$@" >"$dir/out" 2>&1
	got=$?
	[ "$got" = "$want" ] || { fail "$what: exit status $got, expected $want"; cat "$dir/out"; }
}

# Start `rshare serve` and wait for its ready line; $serve is its pid.
start_broker() {
	"$RSHARE" serve --ready-fd 3 3>"$dir/fifo" 2>>"$dir/serve.log" &
	serve=$!
	pids="$pids $serve"
	read -r line <"$dir/fifo"
	[ "$line" = "ready $RSHARE_BROKER" ] || fail "ready line '$line'"
}

stop_broker() {
	kill -TERM "$serve"
	wait "$serve" || fail "serve exited with $?"
	[ ! -e "$RSHARE_BROKER" ] || fail "the socket was left behind"
	[ ! -e "$RSHARE_BROKER.lock" ] || fail "the lock file was left behind"
}

# ---- ready, 100 of 100 ----
mkfifo "$dir/fifo"
i=0
while [ $i -lt 100 ]; do
	start_broker
	"$RSHARE" shares >"$dir/out" 2>&1 || { fail "run $i: shares after the ready line"; cat "$dir/out"; }
	stop_broker
	i=$((i + 1))
done
echo "ready-fd: 100 runs"

# ---- sd_notify, without libsystemd ----
for where in "$dir/notify" "@rshare-test-$$"; do
	/usr/bin/python3 - "$RSHARE" "$where" <<'PY' || fail "sd_notify to $where"
import os, socket, subprocess, sys
rshare, where = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + where[1:] if where.startswith("@") else where)
s.settimeout(10)
p = subprocess.Popen([rshare, "serve"], env=dict(os.environ, NOTIFY_SOCKET=where),
                     stderr=subprocess.DEVNULL)
ready = s.recv(4096).decode()
assert "READY=1" in ready.split("\n") and f"MAINPID={p.pid}" in ready, ready
subprocess.run([rshare, "shares"], check=True, stdout=subprocess.DEVNULL)  # listening
p.terminate()
assert s.recv(4096).decode() == "STOPPING=1"
assert p.wait(timeout=10) == 0
print("sd_notify:", where, ready.split("\n")[0])
PY
done

# ---- exit statuses ----
expect 2 "withdraw without NAME" "$RSHARE" withdraw
expect 2 "a --ready-fd that is not open" "$RSHARE" serve --ready-fd 99
expect 2 "a bad --timeout" "$RSHARE" attach --timeout soon x
expect 3 "shares without a broker" "$RSHARE" shares
expect 3 "attach without a broker" "$RSHARE" attach x
expect 3 "withdraw without a broker" "$RSHARE" withdraw x
start_broker
expect 7 "a second broker on the socket" "$RSHARE" serve
expect 4 "attach to an absent name" "$RSHARE" attach absent
expect 4 "withdraw an absent name" "$RSHARE" withdraw absent
expect 5 "attach --timeout to an absent name" "$RSHARE" attach --timeout 200 absent
expect 0 "publish --persistent" "$RSHARE" publish --persistent team/kept
expect 7 "publish a taken name" "$RSHARE" publish --persistent team/kept
expect 0 "attach to it" "$RSHARE" attach team/kept
if [ "$(id -u)" = 0 ]; then
	expect 6 "attach as another uid" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$RSHARE" attach team/kept
	expect 6 "withdraw as another uid" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$RSHARE" withdraw team/kept
else
	fail "exit status 6 (refused) is checked as root only (switching uids); run as root"
fi
expect 0 "withdraw" "$RSHARE" withdraw team/kept
grep -q "^withdrew team/kept$" "$dir/out" || fail "withdraw did not say what it did"
expect 4 "withdraw it again" "$RSHARE" withdraw team/kept
stop_broker

if [ $failures -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all passed"
