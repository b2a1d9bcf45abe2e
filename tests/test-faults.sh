#!/bin/sh
# Faults under the mount: the vault folder on a full file system, then
# read-only. Every write fails with a clear error, no note is changed or
# emptied, the daemon keeps serving, and writes work again once the fault
# is gone. Needs root (a small tmpfs) and /dev/fuse; else skipped (77).
#   test-faults.sh VAULTD VAULTCTL
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
[ -e /dev/fuse ] || { echo "no /dev/fuse: skipping"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "not root (no tmpfs): skipping"; exit 77; }
make_tmp
fs=$tmp/fs
V=$fs/vault
cleanup_more() { umount -l "$fs" 2>/dev/null; }
mkdir -p "$fs" "$M" "$tmp/run" "$tmp/cache"
mount -t tmpfs -o size=4m tmpfs "$fs" || { echo "no tmpfs: skipping"; exit 77; }
ctl() { XDG_RUNTIME_DIR=$tmp/run "$vaultctl" --vault "$V" "$@"; }
same() { # note expected-text what
	[ "$(cat "$V/$1")" = "$2" ] || fail "$3: $1 is now '$(head -c 80 "$V/$1")'"
}

mkdir -p "$V/.obsidian"
printf 'keep me #known\n' >"$V/Keep.md"
printf 'other [[Keep]]\n' >"$V/Other.md"
XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache \
	"$vaultd" --vault "$V" --mount "$M" -f 2>"$tmp/log" &
dpid=$!
for _ in $(seq 300); do
	grep -q " $M " /proc/mounts && [ -f "$M/Keep.md" ] && break
	sleep 0.05
done
grep -q " $M " /proc/mounts || { cat "$tmp/log"; echo "FAIL: no mount"; exit 1; }
ctl status >/dev/null 2>&1 || sleep 1

# 1. A full file system.
# Full to the last page (tmpfs allocates whole pages).
for bs in 64k 4k; do
	dd if=/dev/zero of="$fs/filler-$bs" bs=$bs 2>/dev/null
done
# A shell's own > reports a refused close() nowhere (dup2): the note
# must still be as it was; external programs see the error.
printf 'new text #known\n' >"$M/Keep.md" 2>/dev/null
same Keep.md "keep me #known" "full disk, > through the mount"
if /bin/echo 'new text #known' >"$M/Keep.md" 2>"$tmp/err"; then
	fail "a write to a full disk reported success"
fi
grep -qi "no space" "$tmp/err" || fail "full disk: error was '$(cat "$tmp/err")'"
same Keep.md "keep me #known" "full disk, /bin/echo >"
dd if="$V/Other.md" of="$M/Keep.md" status=none 2>/dev/null &&
	fail "dd to a full disk reported success"
same Keep.md "keep me #known" "full disk, dd"
printf 'more\n' >>"$M/Keep.md" 2>/dev/null
same Keep.md "keep me #known" "full disk, >> through the mount"
cp "$V/Other.md" "$M/Keep.md" 2>/dev/null && fail "cp to a full disk reported success"
same Keep.md "keep me #known" "full disk, cp"
/bin/echo x >"$M/New.md" 2>/dev/null && fail "a new note on a full disk reported success"
[ -s "$V/New.md" ] && fail "full disk: New.md has text"
out=$(ctl call append_note name=Keep text=more 2>&1) && fail "append_note on a full disk reported success"
echo "$out" | grep -qi "space\|ENOSPC\|write" || fail "append_note error: $out"
same Keep.md "keep me #known" "full disk, append_note"
mv "$M/Other.md" "$M/Renamed.md" 2>/dev/null
[ -f "$V/Other.md" ] || [ -f "$V/Renamed.md" ] || fail "full disk: rename lost Other.md"
[ -f "$V/Renamed.md" ] && mv "$M/Renamed.md" "$M/Other.md" 2>/dev/null
ctl status >/dev/null || fail "daemon not answering on a full disk"
rm -f "$fs"/filler-*
rm -f "$M/New.md"
printf 'after #known\n' >"$M/Keep.md" || fail "write after freeing space"
same Keep.md "after #known" "space freed"

# 2. A read-only file system.
sync
mount -o remount,ro "$fs" || fail "remount ro"
if /bin/echo 'ro text #known' >"$M/Keep.md" 2>"$tmp/err"; then
	fail "a write to a read-only folder reported success"
fi
grep -qi "read-only" "$tmp/err" || fail "read-only: error was '$(cat "$tmp/err")'"
same Keep.md "after #known" "read-only, > through the mount"
rm "$M/Keep.md" 2>/dev/null && fail "delete on a read-only folder reported success"
[ -f "$V/Keep.md" ] || fail "read-only: Keep.md gone"
out=$(ctl call update_note name=Keep content=ro 2>&1) && fail "update_note on a read-only folder reported success"
same Keep.md "after #known" "read-only, update_note"
ctl call read_note name=Keep >/dev/null || fail "read_note on a read-only folder"
mount -o remount,rw "$fs" || fail "remount rw"
printf 'rw again #known\n' >"$M/Keep.md" || fail "write after remount rw"
same Keep.md "rw again #known" "rw again"

kill -TERM "$dpid"
wait "$dpid" || fail "vaultd exited with $? after the faults"
dpid=
grep -q " $M " /proc/mounts && fail "still mounted after SIGTERM"
if [ "$failures" -ne 0 ]; then
	echo "---- vaultd log ----" >&2
	tail -30 "$tmp/log" >&2
	exit 1
fi
echo "faults ok: full disk and read-only folder"
