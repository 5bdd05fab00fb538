# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The bash completion of rshare, driven as bash drives it: COMP_WORDS and
# COMP_CWORD set, _rshare called with the command's path as $1.
# usage: bash completion_test.bash COMPLETION_FILE RSHARE
set -u
export LC_ALL=C
. "$1"
rshare=$2
failed=0

# complete WORD...: COMPREPLY for the last word, space-separated and sorted.
complete_words() {
	COMP_WORDS=(rshare "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	_rshare "$rshare" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}

expect() { # expect "WANTED" WORD...
	local want=$1 got
	shift
	got=$(complete_words "$@")
	if [[ $got != "$want" ]]; then
		echo "FAIL: rshare $* <TAB>: got '$got', want '$want'" >&2
		failed=1
	fi
}

[[ $(complete -p rshare) == "complete -F _rshare rshare" ]] || { echo "FAIL: not registered" >&2; failed=1; }
expect "demo devices " de
expect "--help --version " -
expect "inspect " ins
# Every command (the list follows the binary; none internal).
all=" $(complete_words "")"
for cmd in devices demo inspect version serve shares publish attach; do
	[[ $all == *" $cmd "* ]] || { echo "FAIL: rshare <TAB> lacks $cmd: '$all'" >&2; failed=1; }
done
[[ $all == *__* ]] && { echo "FAIL: rshare <TAB> offers an internal command: '$all'" >&2; failed=1; }
expect "--device --help --workers " demo --
expect "--workers " demo --w
expect "--json " devices --j
expect "sim0 " demo --device s
expect "sim0 " demo -d ""
tmp=$(mktemp -d) && touch "$tmp/blob.bin"
expect "$tmp/blob.bin " inspect "$tmp/bl"
# A broker's socket is a path; a number is not completed.
touch "$tmp/broker.sock"
expect "$tmp/broker.sock " shares --socket "$tmp/br"
expect "$tmp/broker.sock " attach -s "$tmp/br"
expect " " attach --timeout ""   # nothing offered (complete_words prints one blank)
rm -rf "$tmp"
[[ $failed == 0 ]] && echo "completion test: all checks passed"
exit $failed
