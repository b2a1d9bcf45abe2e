#!/bin/sh
# A folder rename that rewrites 1,000 linking notes (and a note inside
# it), with vaultd killed (kill -9) at a random moment of it, cycle after
# cycle. After each kill: the folder is under exactly one of its two
# names, whole; every linking note and the note inside hold their old
# text or their new text, whole; the restarted vaultd removes the temp
# files the killed one left, and what it holds (links, broken links)
# equals what a fresh reading of the folder finds. A last rename run to
# its end leaves every link resolving.
#   test-rename-folder-crash.sh VAULTD VAULTCTL [CYCLES]
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
cycles=${3:-8}
command -v node >/dev/null || { echo "no node: skipping"; exit 77; }
make_tmp
V=$tmp/vault
N=1000 # linking notes
K=20   # notes in the folder
mkdir -p "$V/.obsidian" "$V/refs/a" "$V/refs/b" "$V/Hub A/Deep" "$V/Elsewhere" \
	"$V/Moved" "$tmp/run" "$tmp/cache"
chmod 700 "$tmp/run"
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
ctl() { timeout 60 "$vaultctl" --vault "$V" "$@"; }
# The folder's two places: A is "Hub A", B is "Moved/Hub B".
dir_of() { [ "$1" = A ] && echo "Hub A" || echo "Moved/Hub B"; }
# Linking note $1's text when the folder is at $2. Each note in the folder
# has a namesake elsewhere: its wikilinks keep the folder's name.
ref_text() {
	k=$(($1 % K))
	if [ "$2" = A ]; then
		printf '# Ref %s\n\nSee [[Hub A/Note %s]] and [n](../../Hub%%20A/Note%%20%s.md).\n' "$1" $k $k
	else
		printf '# Ref %s\n\nSee [[Hub B/Note %s]] and [n](../../Moved/Hub%%20B/Note%%20%s.md).\n' "$1" $k $k
	fi
}
inner_text() {
	[ "$1" = A ] && printf '[up](../../Top.md)\n' || printf '[up](../../../Top.md)\n'
}
ref_path() { echo "$V/refs/$([ $(($1 % 2)) = 0 ] && echo a || echo b)/Ref $1.md"; }
k=0
while [ $k -lt $K ]; do
	printf '# Note %s\n' $k >"$V/Hub A/Note $k.md"
	printf 'namesake %s\n' $k >"$V/Elsewhere/Note $k.md"
	k=$((k + 1))
done
inner_text A >"$V/Hub A/Deep/Inner.md"
printf 'PNG' >"$V/Hub A/Deep/pic.png"
printf '# Top\n' >"$V/Top.md"
i=0
while [ $i -lt $N ]; do
	ref_text $i A >"$(ref_path $i)"
	i=$((i + 1))
done

start() {
	"$vaultd" --vault "$V" --no-mount -f 2>>"$tmp/log" &
	dpid=$!
	for _ in $(seq 500); do
		ctl status 2>/dev/null | grep -q "^index: *ready" && return 0
		sleep 0.02
	done
	fail "vaultd did not come up"
	return 1
}

# The state on disk: the folder under one name, every note whole.
check_files() { # what
	if [ -d "$V/Hub A" ] && [ -d "$V/Moved/Hub B" ]; then
		fail "$1: the folder is there under both names"
		return
	elif [ -d "$V/Hub A" ]; then
		at=A
	elif [ -d "$V/Moved/Hub B" ]; then
		at=B
	else
		fail "$1: the folder is gone"
		return
	fi
	d="$V/$(dir_of $at)"
	n=$(find "$d" -name 'Note *.md' | wc -l)
	[ "$n" = $K ] || fail "$1: $n notes in the folder, not $K"
	[ "$(cat "$d/Deep/pic.png")" = PNG ] || fail "$1: the attachment is not whole"
	t=$(cat "$d/Deep/Inner.md")
	[ "$t" = "$(inner_text A)" ] || [ "$t" = "$(inner_text B)" ] ||
		fail "$1: Inner.md is neither its old nor its new text: '$t'"
	na=0
	nb=0
	i=0
	while [ $i -lt $N ]; do
		t=$(cat "$(ref_path $i)")
		if [ "$t" = "$(ref_text $i A)" ]; then
			na=$((na + 1))
		elif [ "$t" = "$(ref_text $i B)" ]; then
			nb=$((nb + 1))
		else
			fail "$1: Ref $i is neither its old nor its new text: '$t'"
		fi
		i=$((i + 1))
	done
}

# How long one rename takes here, run to its end: the kills land within.
start || exit 1
t0=$(date +%s%N)
ctl call rename_folder old_path="Hub A" new_path="Moved/Hub B" >/dev/null ||
	fail "a rename failed"
span=$((($(date +%s%N) - t0) / 1000000 + 1))
check_files "a rename run to its end"
[ "$nb" = $N ] || fail "after a rename: $na notes still link to Hub A"
ctl stop >/dev/null
wait "$dpid" 2>/dev/null
dpid=
mixed=0
for cycle in $(seq "$cycles"); do
	if [ -d "$V/Hub A" ]; then from="Hub A" to="Moved/Hub B"; else from="Moved/Hub B" to="Hub A"; fi
	start || break
	for _ in $(seq 500); do
		ctl status 2>/dev/null | grep -q "^search: *ready" && break
		sleep 0.02
	done
	# Notes linking to the new place already (left by a kill that came
	# between a rename and its links' rewrite: broken links until now).
	pre_to=$([ "$to" = "Hub A" ] && echo "$na" || echo "$nb")
	ctl call rename_folder old_path="$from" new_path="$to" >/dev/null 2>&1 &
	cpid=$!
	# Somewhere in the time a rename takes (the call's start included).
	ms=$(($(od -An -N2 -tu2 /dev/urandom) % span))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
	kill -9 "$dpid"
	wait "$dpid" 2>/dev/null
	dpid=
	wait "$cpid" 2>/dev/null
	check_files "cycle $cycle, killed"
	to_at=$([ "$to" = "Hub A" ] && echo A || echo B)
	now_to=$([ "$to_at" = A ] && echo "$na" || echo "$nb")
	stale=$((N - now_to))
	if [ "$at" != "$to_at" ] && [ "$now_to" != "$pre_to" ]; then
		# New texts are put in place only once the folder moved.
		fail "cycle $cycle: notes link to the new place, the folder is at the old one"
	elif [ "$at" = "$to_at" ] && [ "$stale" -gt 0 ]; then
		# Killed between the folder's rename and the new texts.
		mixed=$((mixed + 1))
	fi
	start || break
	left=$(find "$V" -name '*.vaultd-*.tmp' -not -path '*/.vaultd/*')
	[ -z "$left" ] || fail "cycle $cycle: temp files left after the restart: $left"
	ctl check --json >"$tmp/on.json" || fail "cycle $cycle: check"
	ctl stop >/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
	ctl check --offline --json >"$tmp/off.json"
	node "$(dirname "$0")/same-check.js" "$tmp/on.json" "$tmp/off.json" ||
		fail "cycle $cycle: after the restart, the index differs from the folder"
done
# A rename run to its end: links left pointing at the other place resolve
# again there, the others are rewritten; nothing is broken.
start && {
	if [ -d "$V/Hub A" ]; then from="Hub A" to="Moved/Hub B"; else from="Moved/Hub B" to="Hub A"; fi
	ctl call rename_folder old_path="$from" new_path="$to" >/dev/null ||
		fail "the last rename failed"
	check_files "after the last rename"
	want=$nb
	[ "$to" = "Hub A" ] && want=$na
	[ "$want" = $N ] ||
		fail "after the last rename to $to: $na notes link to Hub A, $nb to Hub B"
	[ "$(ctl call find_broken_links)" = "[]" ] || fail "broken links after the last rename"
	ctl stop >/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
}
if [ "$failures" -ne 0 ]; then
	echo "---- vaultd log ----" >&2
	tail -30 "$tmp/log" >&2
	exit 1
fi
echo "folder rename crash ($span ms each): $cycles kill -9 during a rename of a folder $N notes link to ($mixed between the folder's rename and its links' rewrite): every note whole, the index equal to the folder"
