# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bash completion for rshare(1). Commands and options are read from the
# command's own --help output, so they follow the installed version.
_rshare()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[1]} words

	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		# "  name args   summary" lines of the commands: section.
		words=$("$1" --help 2>/dev/null |
			sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p')
		[[ $cur == -* ]] && words="--help --version"
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
		return
	fi
	case $prev in
	--device | -d)
		words=$("$1" devices 2>/dev/null | sed -n '2,$s/ .*//p')
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
		return
		;;
	--socket | -s)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--workers | -w | --timeout | -t | --allow-uid | -u | --allow-gid | -g | --ready-fd | -r)
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		# The long options of "  -x, --name=VALUE   text" help lines.
		words=$("$1" "$cmd" --help 2>/dev/null |
			sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p')
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	elif [[ $cmd == inspect ]]; then
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _rshare rshare
