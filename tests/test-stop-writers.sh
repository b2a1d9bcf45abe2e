#!/bin/bash
# vaultd stopped (SIGTERM) while shells write notes through the mount,
# cycle after cycle: no note is emptied or torn. Each writer opens a note
# for writing (O_TRUNC) onto a descriptor of its own (exec N>note), the
# way a shell's > does, writes the text through it and closes it. The
# close of the first descriptor after that dup2 is not the end of the
# text; when it reached vaultd after its stop had detached the mount, the
# kernel named the file from the mount's root, vaultd did not see the
# descriptor still held and committed the empty text. The writers hold
# 400 other descriptors, ahead of that one, so that looking through them
# takes long enough for the stop to land in it most cycles.
#   test-stop-writers.sh VAULTD [CYCLES]
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
cycles=${2:-20}
[ -e /dev/fuse ] || { echo "no /dev/fuse: skipping"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "not root: skipping"; exit 77; }
make_tmp
V=$tmp/vault
# The mount point sits in a read-only folder: a writer that runs on after
# the mount is gone gets an error instead of writing into the bare folder.
mkdir -p "$V/.obsidian" "$tmp/ro" "$tmp/run" "$tmp/cache"
chmod 700 "$tmp/run"
mount -t tmpfs -o size=1m,mode=755 tmpfs "$tmp/ro" || {
	echo "no tmpfs: skipping"
	exit 77
}
M=$tmp/ro/mnt
mkdir "$M" && mount -o remount,ro "$tmp/ro"
cleanup_more() { umount -l "$tmp/ro" 2>/dev/null; }
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache

# A note's text at a sequence number: every line names it.
text() { # note seq
	printf 'ID %s@%s\n' "$1" "$2"
	for i in 1 2 3 4 5 6 7 8; do
		printf 'line %s of %s [[Hub]] @%s\n' "$i" "$1" "$2"
	done
	printf 'END %s@%s\n' "$1" "$2"
}
NOTES="a1 a2 a3 b1 b2 b3 c1 c2 c3"
printf '# Hub\n' >"$V/Hub.md"
for n in $NOTES; do text "$n" 0 >"$V/$n.md"; done

# No fork in the loop: the process vaultd looks at is the writer itself.
writer() { # note...
	local s=0 n fd
	for _ in $(seq 400); do exec {fd}</dev/null; done
	while [ ! -e "$tmp/stop" ]; do
		s=$((s + 1))
		for n in "$@"; do
			exec 999>"$M/$n.md" || continue
			text "$n" "$s" >&999
			exec 999>&-
		done 2>/dev/null
	done
}

start() {
	"$vaultd" --vault "$V" --mount "$M" -f 2>>"$tmp/log" &
	dpid=$!
	for _ in $(seq 300); do
		grep -q " $M fuse" /proc/mounts && [ -f "$M/Hub.md" ] && return 0
		sleep 0.05
	done
	fail "vaultd did not mount"
	tail -5 "$tmp/log" >&2
	return 1
}

emptied=0 torn=0
for c in $(seq "$cycles"); do
	start || break
	rm -f "$tmp/stop"
	pids=
	for w in a b c; do
		writer "${w}1" "${w}2" "${w}3" &
		pids="$pids $!"
	done
	sleep "0.$((RANDOM % 5 + 3))"
	kill -TERM "$dpid"
	for _ in $(seq 300); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$dpid" 2>/dev/null && {
		fail "cycle $c: SIGTERM did not stop vaultd within 30 s"
		kill -9 "$dpid"
	}
	wait "$dpid" 2>/dev/null
	dpid=
	touch "$tmp/stop"
	for p in $pids; do wait "$p" 2>/dev/null; done
	for n in $NOTES; do
		f=$V/$n.md
		if [ ! -s "$f" ]; then
			fail "cycle $c: $n.md emptied"
			emptied=$((emptied + 1))
			text "$n" 0 >"$f"
			continue
		fi
		s=$(head -1 "$f")
		s=${s#"ID $n@"}
		if [ "$(text "$n" "$s")" != "$(cat "$f")" ]; then
			fail "cycle $c: $n.md torn: $(head -c 200 "$f" | tr '\n' '|')"
			torn=$((torn + 1))
			text "$n" 0 >"$f"
		fi
	done
done
echo "stop under writers: $cycles SIGTERM cycles, emptied=$emptied torn=$torn"
[ "$failures" = 0 ]
