#!/bin/sh
# The vault folder replaced, moved or deleted under a running vaultd.
#  - replaced (rm -rf V; cp -a backup V): vaultd starts over on the new
#    folder: its notes are served, through the tools and the mount;
#  - moved (mv V V2) or deleted: status and tool calls say "is gone",
#    the log says so, vaultd stops with an error; a vaultd on V2 may
#    then start. Never "0 notes" as if the vault were empty.
# With /dev/fuse and root it mounts; else it runs without the mount.
#   test-vault-moved.sh VAULTD VAULTCTL
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
make_tmp
mount_ok=0
[ -e /dev/fuse ] && [ "$(id -u)" = 0 ] && mount_ok=1
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -p "$XDG_RUNTIME_DIR" "$M"
chmod 700 "$XDG_RUNTIME_DIR"
V=$tmp/vault
ctl() { timeout 20 "$vaultctl" --vault "$V" "$@"; }
wait_for() { # seconds command...
	n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
start() {
	margs=--no-mount
	[ $mount_ok = 1 ] && margs="--mount $M"
	"$vaultd" --vault "$V" $margs -f 2>>"$tmp/log" &
	dpid=$!
	wait_for 20 ctl status || { cat "$tmp/log"; fail "no daemon"; exit 1; }
	wait_for 20 sh -c "'$vaultctl' --vault '$V' status | grep -q '^index: *ready'"
}
stopped_with_error() { # what
	for _ in $(seq 200); do
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$dpid" 2>/dev/null; then
		fail "$1: vaultd still running"
		kill -9 "$dpid"
	fi
	wait "$dpid"
	rc=$?
	[ $rc != 0 ] || fail "$1: vaultd stopped with status 0"
	dpid=
	grep -q "is gone" "$tmp/log" || fail "$1: the log does not say the folder is gone"
	if [ $mount_ok = 1 ]; then
		! grep -q " $M " /proc/mounts || fail "$1: mount left behind"
	fi
}

# vaultd may be writing its history meanwhile: rm -rf then finds a folder
# not empty, and is run again, as a user would.
remove_vault() { # what
	for _ in 1 2 3 4 5; do
		rm -rf "$V" 2>/dev/null && break
		sleep 0.2
	done
	[ -e "$V" ] && fail "$1: rm -rf of the vault folder kept failing"
}

mkdir -p "$V/sub" "$V/.obsidian"
printf 'alpha #known\n' >"$V/Alpha.md"
printf 'beta [[Alpha]]\n' >"$V/sub/Beta.md"
start

# 1. Replaced by a restored backup with one more note.
cp -a "$V" "$tmp/backup"
rm -rf "$tmp/backup/.vaultd"
printf 'gamma [[Alpha]]\n' >"$tmp/backup/Gamma.md"
pid0=$dpid
remove_vault replaced
cp -a "$tmp/backup" "$V"
wait_for 30 ctl call read_note name=Gamma ||
	fail "replaced: the restored folder's new note is not served"
ctl call read_note name=Alpha | grep -q alpha || fail "replaced: Alpha not served"
out=$(ctl call get_backlinks name=Alpha 2>&1)
echo "$out" | grep -q Gamma || fail "replaced: links not re-indexed: $out"
[ "$dpid" = "$pid0" ] && kill -0 "$dpid" || fail "replaced: vaultd is not the same process"
if [ $mount_ok = 1 ]; then
	wait_for 20 test -f "$M/Gamma.md" || fail "replaced: the mount does not show Gamma.md"
	printf 'through the mount #known\n' >"$M/Delta.md" 2>/dev/null ||
		fail "replaced: a write through the mount failed"
	[ "$(cat "$V/Delta.md" 2>/dev/null)" = "through the mount #known" ] ||
		fail "replaced: the mount does not write to the new folder"
fi
ctl call create_note name=Epsilon content=e >/dev/null || fail "replaced: create_note"
[ -f "$V/Epsilon.md" ] || fail "replaced: create_note did not write to the new folder"

# 2. Moved away.
mv "$V" "$tmp/moved"
gone_seen=0
for _ in $(seq 100); do
	if ctl status 2>/dev/null | grep -q "is gone"; then
		gone_seen=1
		break
	fi
	sleep 0.1
done
[ $gone_seen = 1 ] || fail "moved: status never said the folder is gone"
out=$(ctl call list_notes 2>&1) && fail "moved: list_notes answered: $out"
echo "$out" | grep -q "is gone" || fail "moved: list_notes said: $out"
stopped_with_error moved
# A daemon on the folder's new place starts (the first one let go).
V=$tmp/moved
: >"$tmp/log"
start
ctl call read_note name=Gamma >/dev/null || fail "moved: a vaultd on the new place does not serve"

# 3. Deleted.
remove_vault deleted
stopped_with_error deleted

if [ $failures -gt 0 ]; then
	echo "--- log"
	cat "$tmp/log"
	echo "$failures failures"
	exit 1
fi
echo "vault folder replaced, moved, deleted: all good"
