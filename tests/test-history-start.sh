#!/bin/sh
# The history keeps every original. On a generated 10k-note vault, writes
# made right after start (tools through the control socket; and through
# the mount when root with /dev/fuse) become versions of their own, after
# an initial version that holds each note's original bytes: changed,
# renamed and deleted notes alike. Then a stop while the first recording
# packs: git fsck calls the repository clean, and the next start finishes
# the packing.
#   test-history-start.sh VAULTD VAULTCTL GEN_VAULT
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
gen=$(abs "$3")
command -v git >/dev/null || { echo "no git: skipping"; exit 77; }
make_tmp
V=$tmp/vault
mkdir -p "$tmp/run" "$tmp/cache" "$tmp/orig" "$M"
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mount=
[ "$(id -u)" = 0 ] && [ -e /dev/fuse ] && mount=1
ctl() { "$vaultctl" --vault "$V" "$@"; }
git_h() { git --git-dir="$V/.vaultd/history.git" "$@"; }
# status field: history.KEY is true
hist_is() {
	ctl --json status 2>/dev/null | tr -d ' \n' |
		grep -q "\"$1\":true"
}
start() {
	if [ -n "$mount" ]; then
		"$vaultd" --vault "$V" --mount "$M" -f 2>>"$tmp/log" &
	else
		"$vaultd" --vault "$V" --no-mount -f 2>>"$tmp/log" &
	fi
	dpid=$!
	for _ in $(seq 400); do
		ctl status >/dev/null 2>&1 && break
		sleep 0.02
	done
	if [ -n "$mount" ]; then
		for _ in $(seq 400); do
			grep -q " $M " /proc/mounts && break
			sleep 0.02
		done
	fi
}
stop() {
	ctl stop >/dev/null 2>&1
	wait "$dpid" 2>/dev/null
	dpid=
}
wait_settled() {
	for _ in $(seq 1200); do
		hist_is settled && return 0
		sleep 0.1
	done
	fail "history never settled: $(ctl status 2>&1 | grep -i hist)"
}
# The text of a note at its oldest version, as get_note_version shows it
# (the header ends with the line "---" and an empty line).
oldest_text() {
	id=$(ctl history "$1" --limit 100 | sed -n 's/^- \([0-9a-f]*\) .*/\1/p' |
		tail -1)
	[ -n "$id" ] || { echo "(no versions)"; return; }
	ctl call get_note_version name="$1" version="$id" |
		awk 'done { print; next } /^---$/ { getline; done = 1 }'
}

"$gen" "$V" 10000 1 >/dev/null || { echo "FAIL: gen_vault"; exit 1; }
# Four notes: changed by a tool, changed through the mount, renamed,
# deleted; their originals kept aside.
find "$V" -name '*.md' | sort | head -4 >"$tmp/picked"
i=0
while IFS= read -r f; do
	i=$((i + 1))
	rel=${f#"$V"/}
	echo "${rel%.md}" >"$tmp/name$i"
	cp "$f" "$tmp/orig/$i"
done <"$tmp/picked"
n1=$(cat "$tmp/name1") n2=$(cat "$tmp/name2")
n3=$(cat "$tmp/name3") n4=$(cat "$tmp/name4")

# 1. Writes at once after start, while the first recording runs.
t0=$(date +%s.%N)
start
ctl call update_note name="$n1" content="changed at start" >/dev/null ||
	fail "update_note right after start"
if [ -n "$mount" ]; then
	printf 'changed through the mount\n' >"$M/$n2.md" ||
		fail "write through the mount right after start"
	mv "$M/$n3.md" "$M/$n3 moved.md" || fail "rename through the mount"
	rm "$M/$n4.md" || fail "delete through the mount"
else
	ctl call update_note name="$n2" content="changed through a tool" \
		>/dev/null || fail "second update_note"
	ctl call rename_note old_name="$n3" new_name="$n3 moved" >/dev/null ||
		fail "rename_note right after start"
	ctl call delete_note name="$n4" >/dev/null ||
		fail "delete_note right after start"
fi
hist_is recorded && echo "note: the first recording had already run" \
	"when the writes came (they were too slow to test the race)"
wait_settled
echo "first recording settled $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s after start"
for i in 1 2; do
	n=$(cat "$tmp/name$i")
	oldest_text "$n" >"$tmp/got"
	cmp -s "$tmp/got" "$tmp/orig/$i" ||
		fail "the oldest version of '$n' is not its original text:" \
			"$(head -c 200 "$tmp/got")"
	[ "$(ctl history "$n" | grep -c '^- ')" = 2 ] ||
		fail "'$n' should have 2 versions: $(ctl history "$n")"
done
oldest_text "$n3 moved" >"$tmp/got"
cmp -s "$tmp/got" "$tmp/orig/3" ||
	fail "the renamed note's oldest version is not its original text"
first=$(git_h rev-list --max-parents=0 HEAD)
git_h show "$first:$n4.md" >"$tmp/got" 2>/dev/null
cmp -s "$tmp/got" "$tmp/orig/4" ||
	fail "the deleted note is not in the initial version as it was"
git_h show "$first:$n3 moved.md" >/dev/null 2>&1 &&
	fail "the initial version holds the rename's new name"
git_h log --format='%an|%s' | tail -1 | grep -q '^vaultd|Initial state' ||
	fail "the oldest commit is not the initial state: $(git_h log --format='%an|%s' | tail -3)"
stop

# 2. A stop while the first recording packs.
rm -rf "$V" "$tmp/cache"
mkdir -p "$tmp/cache"
"$gen" "$V" 10000 2 >/dev/null
start
caught=
for _ in $(seq 1200); do
	if hist_is packing; then
		caught=1
		break
	fi
	sleep 0.02
done
stop
[ -n "$caught" ] || echo "note: the pack was not caught running; stopped after it"
git_h fsck --strict >"$tmp/fsck" 2>&1 || fail "git fsck after a stop while packing: $(head -5 "$tmp/fsck")"
ls "$V/.vaultd/history.git/objects/pack" | grep -v '^pack-[0-9a-f]*\.\(pack\|idx\|rev\)$' \
	>"$tmp/junk" && fail "leftovers in objects/pack: $(cat "$tmp/junk")"
start
wait_settled
[ "$(cat "$V/.vaultd/history.git/vaultd.packed" 2>/dev/null)" = "$(git_h rev-parse HEAD)" ] ||
	fail "the next start did not finish packing"
loose=$(find "$V/.vaultd/history.git/objects" -type f -path '*/objects/??/*' | wc -l)
[ "$loose" -lt 100 ] || fail "$loose loose objects left after the next start"
git_h fsck --strict >"$tmp/fsck" 2>&1 || fail "git fsck after the next start: $(head -5 "$tmp/fsck")"
stop
grep -i "cannot pack" "$tmp/log" && fail "a stop while packing was logged as a failure"

if [ "$failures" -gt 0 ]; then
	echo "--- vaultd log"
	tail -30 "$tmp/log"
	echo "$failures failure(s)"
	exit 1
fi
echo "history keeps every original: ok${mount:+ (with the mount)}"
