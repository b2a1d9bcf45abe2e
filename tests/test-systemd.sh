#!/bin/sh
# The user unit verifies, and vaultd speaks the notify protocol: READY=1
# once the index is built and the mount is live, STOPPING=1 on SIGTERM.
#   test-systemd.sh VAULTD NOTIFY_LISTEN UNIT_FILE VAULTD_MAN_PAGE
set -eu
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
vaultd=$(abs "$1")
listen=$(abs "$2")
unit=$(abs "$3")
manpage=$(abs "$4")
[ -e /dev/fuse ] || { echo "no /dev/fuse: skipping"; exit 77; }
tmp=$(mktemp -d)
cleanup() {
	[ -n "${lpid:-}" ] && kill "$lpid" 2>/dev/null || true
	[ -n "${dpid:-}" ] && kill "$dpid" 2>/dev/null || true
	fusermount3 -u -z "$tmp/mnt" 2>/dev/null || umount -l "$tmp/mnt" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/notify" >&2 || true; exit 1; }

# 1. The unit file, with the built vaultd in it, as systemd sees it.
if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s|^ExecStart=[^ ]*/vaultd|ExecStart=$vaultd|" "$unit" >"$tmp/vaultd@vault.service"
	# Its Documentation= pages are found (vaultd(8) as built).
	mkdir -p "$tmp/man/man8"
	ln -s "$manpage" "$tmp/man/man8/vaultd.8"
	out=$(MANPATH="$tmp/man:$(manpath 2>/dev/null)" \
		systemd-analyze verify "$tmp/vaultd@vault.service" 2>&1) || true
	# Only complaints about this unit count (not the host's other units).
	if echo "$out" | grep "vaultd@vault.service" | grep -vi "Failed to open\|Unit file .* is not executable" | grep .; then
		fail "systemd-analyze verify: $out"
	fi
	echo "unit verified"
else
	echo "systemd-analyze not found: unit not verified"
fi

# 2. The notify protocol.
mkdir -p "$tmp/vault/sub" "$tmp/vault/.obsidian" "$tmp/mnt" "$tmp/run"
printf 'hello [[b]]\n' >"$tmp/vault/a.md"
printf 'b\n' >"$tmp/vault/sub/b.md"
"$listen" "$tmp/notify.sock" >"$tmp/notify" &
lpid=$!
for _ in $(seq 50); do [ -S "$tmp/notify.sock" ] && break; sleep 0.05; done
NOTIFY_SOCKET="$tmp/notify.sock" XDG_RUNTIME_DIR="$tmp/run" \
	"$vaultd" --vault "$tmp/vault" --mount "$tmp/mnt" -f 2>"$tmp/log" &
dpid=$!
for _ in $(seq 200); do grep -q '^READY=1' "$tmp/notify" && break; sleep 0.05; done
grep -q '^READY=1' "$tmp/notify" || fail "no READY=1"
# READY came after the mount: it is live now.
grep -q " $tmp/mnt " /proc/mounts || fail "READY=1 before the mount"
[ "$(cat "$tmp/mnt/a.md")" = "hello [[b]]" ] || fail "mount not serving"
grep -q '^STATUS=.*Serving 2 notes, mounted at' "$tmp/notify" || fail "no status text"
kill -TERM "$dpid"
wait "$dpid" || fail "vaultd exited with $?"
dpid=
grep -q '^STOPPING=1' "$tmp/notify" || fail "no STOPPING=1"
grep -q " $tmp/mnt " /proc/mounts && fail "still mounted after SIGTERM"
echo "notify protocol ok"
