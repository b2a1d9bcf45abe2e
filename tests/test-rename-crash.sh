#!/bin/sh
# A rename that rewrites many linking notes, with vaultd killed (kill -9)
# at a random moment of it, cycle after cycle. After each kill: the note
# is under exactly one of its two names; every linking note holds its old
# text or its new text, whole; the restarted vaultd removes the temp files
# the killed one left, and what it holds (links, broken links) equals what
# a fresh reading of the folder finds (online check = offline check).
#   test-rename-crash.sh VAULTD VAULTCTL [CYCLES]
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
cycles=${3:-10}
command -v node >/dev/null || { echo "no node: skipping"; exit 77; }
make_tmp
V=$tmp/vault
N=400
mkdir -p "$V/.obsidian" "$V/refs/a" "$V/refs/b" "$tmp/run" "$tmp/cache"
chmod 700 "$tmp/run"
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
ctl() { timeout 60 "$vaultctl" --vault "$V" "$@"; }
# The text of linking note $1 when the hub is named $2.
ref_text() {
	printf '# Ref %s\n\nSee [[%s]] and [[%s|the hub]].\n' "$1" "$2" "$2"
}
i=0
while [ $i -lt $N ]; do
	ref_text $i "Hub A" >"$V/refs/$([ $((i % 2)) = 0 ] && echo a || echo b)/Ref $i.md"
	i=$((i + 1))
done
printf '# Hub\n' >"$V/Hub A.md"
ref_path() { echo "$V/refs/$([ $(($1 % 2)) = 0 ] && echo a || echo b)/Ref $1.md"; }

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

# The state on disk: every note whole, the hub under one name.
check_files() { # what
	if [ -f "$V/Hub A.md" ] && [ -f "$V/Hub B.md" ]; then
		fail "$1: the hub is there under both names"
	elif [ ! -f "$V/Hub A.md" ] && [ ! -f "$V/Hub B.md" ]; then
		fail "$1: the hub is gone"
	fi
	[ "$(cat "$V/Hub A.md" "$V/Hub B.md" 2>/dev/null)" = "# Hub" ] ||
		fail "$1: the hub's text changed"
	na=0
	nb=0
	i=0
	while [ $i -lt $N ]; do
		t=$(cat "$(ref_path $i)")
		if [ "$t" = "$(ref_text $i "Hub A")" ]; then
			na=$((na + 1))
		elif [ "$t" = "$(ref_text $i "Hub B")" ]; then
			nb=$((nb + 1))
		else
			fail "$1: Ref $i is neither its old nor its new text: '$t'"
		fi
		i=$((i + 1))
	done
}

mixed=0
for cycle in $(seq "$cycles"); do
	if [ -f "$V/Hub A.md" ]; then from="Hub A" to="Hub B"; else from="Hub B" to="Hub A"; fi
	start || break
	# Wait for the search index too: the kill should land in the rename.
	for _ in $(seq 500); do
		ctl status 2>/dev/null | grep -q "^search: *ready" && break
		sleep 0.02
	done
	ctl call rename_note old_name="$from" new_name="$to" >/dev/null 2>&1 &
	cpid=$!
	# 0 to 0.8 s into the rename.
	sleep "0.$(printf '%03d' $(($(od -An -N2 -tu2 /dev/urandom) % 800)))"
	kill -9 "$dpid"
	wait "$dpid" 2>/dev/null
	dpid=
	wait "$cpid" 2>/dev/null
	check_files "cycle $cycle, killed"
	[ $na -gt 0 ] && [ $nb -gt 0 ] && mixed=$((mixed + 1))
	# The next start cleans up and reads what changed.
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
# Whatever the kills left, a rename that runs to its end links them all.
start && {
	if [ -f "$V/Hub A.md" ]; then from="Hub A" to="Hub B"; else from="Hub B" to="Hub A"; fi
	# Links still naming the other name are broken: a rename to that
	# name makes them resolve again, and rewrites the others.
	ctl call rename_note old_name="$from" new_name="$to" >/dev/null ||
		fail "the last rename failed"
	check_files "after the last rename"
	want=$nb
	[ "$to" = "Hub A" ] && want=$na
	[ "$want" = $N ] ||
		fail "after the last rename to $to: $na link to Hub A, $nb to Hub B"
	ctl stop >/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
}
if [ "$failures" -ne 0 ]; then
	echo "---- vaultd log ----" >&2
	tail -30 "$tmp/log" >&2
	exit 1
fi
echo "rename crash: $cycles kill -9 during a rename of a note $N notes link to ($mixed left it half done): every note whole, the index equal to the folder"
