#!/bin/sh
# Shell completion for vaultctl, in bash (bash-completion) and zsh (a real
# interactive zsh in a pseudo-terminal): commands, options, tool names and
# parameters, client names, and note names from a running daemon; with no
# daemon, nothing, quietly and at once.
#   test-completion.sh VAULTCTL VAULTD
set -u
. "$(dirname "$0")/lib.sh"
vaultctl=$(abs "$1")
vaultd=$(abs "$2")
src=$(cd "$(dirname "$0")/../fs/completion" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
make_tmp
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -p "$XDG_RUNTIME_DIR" "$tmp/bin"
ln -s "$vaultctl" "$tmp/bin/vaultctl"
V=$tmp/vault
cp -a "$here/example-vault" "$V"
"$vaultd" --vault "$V" --no-mount -f 2>"$tmp/log" &
dpid=$!
for _ in $(seq 100); do
	"$vaultctl" --vault "$V" status >/dev/null 2>&1 && break
	sleep 0.05
done

# expect SHELL LINE WORD...: completing LINE offers each WORD (exactly
# this set when the first WORD is "=").
expect() {
	sh_=$1 line=$2
	shift 2
	exact=0
	[ "${1:-}" = "=" ] && exact=1 && shift
	case $sh_ in
	bash) bash "$tmp/bcomp.bash" "$line" >"$tmp/got" 2>/dev/null ;;
	zsh) zsh -f "$here/zcomp.zsh" "$src" "$tmp/bin" "$line" | sed 's/\\//g' >"$tmp/got" ;;
	esac
	for w in "$@"; do
		grep -qxF -- "$w" "$tmp/got" ||
			fail "$sh_: '$line' does not offer '$w' (offers: $(tr '\n' '|' <"$tmp/got"))"
	done
	if [ $exact = 1 ] && [ "$(sort -u "$tmp/got" | grep -c .)" != $# ]; then
		fail "$sh_: '$line' offers more than '$*': $(tr '\n' '|' <"$tmp/got")"
	fi
}

# Bash: the function called as readline would.
if [ -f /usr/share/bash-completion/bash_completion ] && command -v bash >/dev/null; then
	cat >"$tmp/bcomp.bash" <<EOF2
source /usr/share/bash-completion/bash_completion
source "$src/vaultctl.bash"
PATH=$tmp/bin:\$PATH
COMP_LINE=\$1
read -ra COMP_WORDS <<<"\$COMP_LINE"
[[ \$COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1))
COMP_POINT=\${#COMP_LINE}
_vaultctl
printf '%s\n' "\${COMPREPLY[@]}" | sed 's/\\\\//g'
EOF2
	for s in bash; do
		expect $s "vaultctl st" = status stop
		expect $s "vaultctl " status check call history show changes undo tools notes stop init
		expect $s "vaultctl --v" = --vault --version
		expect $s "vaultctl call read_" = read_attachment read_note read_section
		expect $s "vaultctl tools read_" = read_attachment read_note read_section
		expect $s "vaultctl call rename_note " old_name= new_name= dry_run=
		expect $s "vaultctl --vault $V call read_note name=Ro" Roadmap
		expect $s "vaultctl --vault $V history @" = "@Ada Lovelace" "@Grace Hopper"
		expect $s "vaultctl --vault $V show Road" = "Roadmap@"
		expect $s "vaultctl init --client c" = claude-desktop claude-code cursor
		expect $s "vaultctl init --wr" = --write
		expect $s "vaultctl undo --" = --session --since --dry-run --json
	done
	t0=$(date +%s%N)
	expect bash "vaultctl --vault $tmp/none history Ro" =
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 1500 ] || fail "bash: slow with no daemon"
else
	echo "bash-completion is not installed: bash not tried"
fi

if command -v zsh >/dev/null && zsh -fc 'zmodload zsh/zpty' 2>/dev/null; then
	expect zsh "vaultctl st" = status stop
	expect zsh "vaultctl " status check call history show changes undo tools notes stop init
	expect zsh "vaultctl --v" = --vault --version
	expect zsh "vaultctl call read_" = read_attachment read_note read_section
	expect zsh "vaultctl tools read_" = read_attachment read_note read_section
	expect zsh "vaultctl call rename_note " old_name new_name dry_run
	expect zsh "vaultctl --vault $V call read_note name=Ro" Roadmap
	expect zsh "vaultctl --vault $V history @" = "@Ada Lovelace" "@Grace Hopper"
	expect zsh "vaultctl init --client c" = claude-desktop claude-code cursor
	expect zsh "vaultctl init --wr" = --write
	expect zsh "vaultctl undo --" --session --since --dry-run
	expect zsh "vaultctl --vault $tmp/none history Ro" =
	# The option lists written in _vaultctl are vaultctl's own.
	for which in "" init; do
		# shellcheck disable=SC2086
		"$vaultctl" $which --help | sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}\(--[a-z-]*\).*/\2/p' |
			sort -u >"$tmp/help-opts"
		if [ -z "$which" ]; then
			sed -n '/^_vaultctl() {/,/1:command/p' "$src/_vaultctl"
		else
			sed -n '/^    init)/,/;;/p' "$src/_vaultctl"
		fi | grep -o -- "--[a-z][a-z-]*" | sort -u >"$tmp/zsh-opts"
		cmp -s "$tmp/help-opts" "$tmp/zsh-opts" ||
			fail "zsh: the options of 'vaultctl $which' differ from --help: $(diff "$tmp/help-opts" "$tmp/zsh-opts" | grep '^[<>]' | tr '\n' ' ')"
	done
else
	echo "zsh with zsh/zpty is not installed: zsh not tried"
fi

"$vaultctl" --vault "$V" stop >/dev/null 2>&1
wait "$dpid"
dpid=
if [ "$failures" -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "vaultctl completes in bash and zsh"
