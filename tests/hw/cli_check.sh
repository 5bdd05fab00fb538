#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The rshare CLI through the hardware provider.
#   cli_check.sh RSHARE_BIN STANDIN_DIR MISSING_DIR
# With the stand-in rdma-core, `rshare devices` lists its devices as hw
# before sim0 and `rshare demo --device mlx5_sim0` succeeds; without any
# rdma-core (overrides naming missing files) and with the system's, the CLI
# lists sim0 and writes nothing to stderr.
set -u
bin=$1 standin=$2 missing=$3
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	echo "--- stdout"; cat "$out"
	echo "--- stderr"; cat "$err"
	failed=1
}

# run LABEL ENV... -- ARGS...: run the CLI, demand exit 0 and a quiet stderr.
run() {
	label=$1; shift
	envs=""
	while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	if ! env $envs "$bin" "$@" >"$out" 2>"$err"; then
		fail "$label: rshare $* exited non-zero"; return 1
	fi
	if [ -s "$err" ]; then
		fail "$label: rshare $* wrote to stderr"; return 1
	fi
	return 0
}

has() { grep -Eq "$1" "$out" || fail "$2: no line matching '$1'"; }

STANDIN="RSHARE_LIBIBVERBS=$standin/libibverbs.so.1 RSHARE_LIBMLX5=$standin/libmlx5.so.1"
NONE="RSHARE_LIBIBVERBS=$missing/libibverbs.so.1 RSHARE_LIBMLX5=$missing/libmlx5.so.1"

if run "stand-in devices" $STANDIN -- devices; then
	has '^mlx5_sim0 +0x0002c90300a1b2c0 +hw +[a-z_,?-]+$' "stand-in devices"
	has '^rxe_sim1 +0x0002c90300a1b2c1 +hw +[a-z_,?-]+$' "stand-in devices"
	has '^sim0 +0x[0-9a-f]{16} +sim +[a-z_,?-]+$' "stand-in devices"
	[ "$(tail -n 1 "$out" | cut -d' ' -f1)" = sim0 ] || fail "stand-in devices: sim0 is not last"
fi
if run "stand-in devices --json" $STANDIN -- devices --json; then
	has '\{"name":"mlx5_sim0","guid":"0x0002c90300a1b2c0","provider":"hw","caps":\[[a-z_",]*\]\}' "devices --json"
fi
if run "stand-in demo" $STANDIN -- demo --device mlx5_sim0; then
	has 'checked: every worker.s write is in the shared device memory' "stand-in demo"
	has 'MR keys 0x[0-9a-f]+/0x[0-9a-f]+ checked, read the parent.s message from device memory' "stand-in demo"
	has 'all checks passed' "stand-in demo"
fi
# rdma-core 44 (no VAR export) and a device without VARs: the demo says why
# and shares the PD alone.
STANDIN44="RSHARE_LIBIBVERBS=$standin/libibverbs.so.1 RSHARE_LIBMLX5=$standin-44/libmlx5.so.1"
if run "stand-in 44 demo" $STANDIN44 -- demo --device mlx5_sim0; then
	has 'VARs cannot be shared here .*rdma-core 63 or newer.*sharing the PD alone' "stand-in 44 demo"
	has 'checked: every worker.s write is in the shared device memory' "stand-in 44 demo"
	has 'all checks passed' "stand-in 44 demo"
fi
# A provider without import (every one but mlx5) cannot share: the demo
# says why and fails.
if env $STANDIN "$bin" demo --device rxe_sim1 >"$out" 2>"$err"; then
	fail "non-mlx5 demo: rshare demo --device rxe_sim1 succeeded"
elif ! grep -q 'its provider implements no import' "$err"; then
	fail "non-mlx5 demo: no reason given"
fi
# The VAR page is a doorbell on hardware: with the stand-in kernel's mmap
# preloaded in STANDIN_VAR_FAULT mode any read or write of it faults, and
# the demo (parent and workers) still passes, the slots in device memory.
# ASan wants to be first in the library list; the shim only wraps mmap.
FAULT="$STANDIN LD_PRELOAD=$standin/libstandin_mmap.so STANDIN_VAR_FAULT=1 ASAN_OPTIONS=verify_asan_link_order=0"
if run "faulting VAR page demo" $FAULT -- demo --device mlx5_sim0; then
	has 'mapped and left untouched' "faulting VAR page demo"
	has 'checked: every worker.s write is in the shared device memory' "faulting VAR page demo"
	has 'all checks passed' "faulting VAR page demo"
fi
# (That the mode faults on a touch is case var_fault_mode of hw_suite.)

# Diagnostics: the libraries loaded, their version nodes, each device's
# checking level and why a capability is off.
if run "devices --verbose" $STANDIN -- devices --verbose; then
	has "^  libibverbs +$standin/libibverbs.so.1\$" "devices --verbose"
	has '^    IBVERBS_1.10 +resolved ' "devices --verbose"
	has '^    MLX5_1.27 +resolved ' "devices --verbose"
	has '^  checking level: ledger$' "devices --verbose"
	has '^  pd off: its provider implements no import' "devices --verbose"
	has '^  checking level: table$' "devices --verbose"
fi
if run "devices --verbose 44" $STANDIN44 -- devices --verbose; then
	has '^    MLX5_1.27 +missing ' "devices --verbose 44"
	has '^  var off: libmlx5 lacks MLX5_1.27' "devices --verbose 44"
fi
if run "devices --verbose --json" $STANDIN -- devices --verbose --json; then
	has '^\{"rdma_core":\{"libibverbs":\{"path":"[^"]*libibverbs.so.1","nodes":\{"IBVERBS_1.1":true' "devices -v --json"
	has '"name":"mlx5_sim0"[^}]*"checking":"ledger","off":\{\}' "devices -v --json"
fi
# inspect shows the ledger serial a hardware blob carries: the PD and VAR
# that `rshare publish` makes on the stand-in's mlx5 device (a context with
# a ledger) print their text forms, and inspect names "ledger" in each.
bdir=$(mktemp -d /tmp/rshare-hwcli-XXXXXX)
mkfifo "$bdir/fifo"
env $STANDIN "$bin" serve --socket "$bdir/b.sock" --ready-fd 3 3>"$bdir/fifo" 2>"$bdir/serve.log" &
serve=$!
read -r line <"$bdir/fifo"
[ "$line" = "ready $bdir/b.sock" ] || fail "inspect ledger: broker ready line '$line'"
if run "publish" $STANDIN -- publish --socket "$bdir/b.sock" --device mlx5_sim0 --persistent hw/inspect; then
	pd_text=$(sed -n 's/^pd //p' "$out")
	var_text=$(sed -n 's/^var //p' "$out")
	if run "inspect pd" $STANDIN -- inspect "$pd_text"; then
		has '^\{"format":1,"kind":"pd","provider":"hw",.*,"ledger":[0-9]+,"private_len":0,' "inspect pd"
	fi
	if run "inspect var" $STANDIN -- inspect "$var_text"; then
		has '^\{"format":1,"kind":"var","provider":"hw",.*"mmap_off":[0-9]+,"ledger":[0-9]+,"private_len"' "inspect var"
	fi
fi
kill -TERM "$serve"
wait "$serve" || fail "inspect ledger: serve exited with $?"
rm -rf "$bdir"

# The operator's self-check: every item passes on the stand-in's mlx5
# device, with the VAR page faulting on any access; the rxe device shares
# nothing, as it reports; without any RDMA device it exits 77.
if run "selftest" $FAULT -- selftest --device mlx5_sim0; then
	for item in capabilities identity 'PD reuse' 'MR reuse' 'DM reuse' VAR; do
		has "^PASS  $item " "selftest"
	done
	# The next VAR takes the freed one's mmap offset; the ledger refuses
	# the old blob all the same.
	has '^PASS  VAR .*blob refused \(its mmap offset reused by the next VAR\)$' "selftest"
	has '^selftest: passed$' "selftest"
fi
if run "selftest rxe" $STANDIN -- selftest --device rxe_sim1; then
	has '^PASS  capabilities +no sharing, as reported' "selftest rxe"
fi
env $NONE "$bin" selftest >"$out" 2>"$err"
[ $? -eq 77 ] || fail "selftest without RDMA: exit status is not 77"
grep -q 'no RDMA device' "$out" || fail "selftest without RDMA: no reason given"

if run "no rdma-core" $NONE -- devices; then
	has '^sim0 +0x[0-9a-f]{16} +sim +[a-z_,?-]+$' "no rdma-core"
	[ "$(grep -c . "$out")" -eq 2 ] || fail "no rdma-core: more than sim0 listed"
fi

# The system's rdma-core: quiet, sim0 last (whatever hardware comes first).
if run "system rdma-core" -- devices; then
	[ "$(tail -n 1 "$out" | cut -d' ' -f1)" = sim0 ] || fail "system rdma-core: sim0 is not last"
fi

[ $failed -eq 0 ] && echo "cli_check: all passed"
exit $failed
