#!/bin/bash
# Property: after any sequence of file operations, through the mount and
# straight in the vault folder (the watcher's way), vaultd's own idea of
# the vault (`vaultctl check`) equals a fresh reading of the folder
# (`vaultctl check --offline`): notes, attachments, tags, links, broken
# links, orphans, problems. Random operations from a printed seed.
#   test-check-property.sh VAULTD VAULTCTL [ROUNDS] [OPS]
# VAULTD_CHECK_SEED=n replays a seed.
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
rounds=${3:-3}
ops=${4:-150}
[ -e /dev/fuse ] || { echo "no /dev/fuse: skipping"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "not root: skipping"; exit 77; }
command -v node >/dev/null || { echo "no node: skipping"; exit 77; }
make_tmp
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -p "$XDG_RUNTIME_DIR" "$M"
chmod 700 "$XDG_RUNTIME_DIR"
mismatches=0
seed=${VAULTD_CHECK_SEED:-$(($(date +%s) % 100000))}
echo "seed $seed"
RANDOM=$seed

pick() { echo $((RANDOM % $1)); }
# A folder (maybe nested), a note name, an attachment name.
dir() {
	case $(pick 4) in
	0) echo "" ;;
	1) echo "d$(pick 4)/" ;;
	2) echo "d$(pick 4)/e$(pick 3)/" ;;
	*) echo "f$(pick 3)/" ;;
	esac
}
note() { echo "$(dir)n$(pick 12).md"; }
att() { echo "$(dir)a$(pick 8).png"; }
body() { printf 'text %d [[n%d]] ![[a%d.png]] #known\n' $RANDOM $(pick 12) $(pick 8); }

one_op() { # base-folder
	B=$1
	T="timeout 10"
	case $(pick 12) in
	0) d=$(dir); $T mkdir -p "$B/$d" ;;
	1 | 2) f=$(note); $T mkdir -p "$B/$(dirname "$f")" && body | $T tee "$B/$f" >/dev/null ;;
	3) f=$(att); $T mkdir -p "$B/$(dirname "$f")" && echo "png $RANDOM" | $T tee "$B/$f" >/dev/null ;;
	4) f=$(note); [ -f "$B/$f" ] && body | $T tee -a "$B/$f" >/dev/null ;;
	5) a=$(note); b=$(note); [ -f "$B/$a" ] && $T mkdir -p "$B/$(dirname "$b")" && $T mv "$B/$a" "$B/$b" ;;
	6) a=$(att); b=$(att); [ -f "$B/$a" ] && $T mkdir -p "$B/$(dirname "$b")" && $T mv "$B/$a" "$B/$b" ;;
	7) a=d$(pick 4); b=$(dir)g$(pick 4); [ -d "$B/$a" ] && $T mkdir -p "$B/$(dirname "$b")" && $T mv "$B/$a" "$B/$b" ;;
	8) f=$(note); [ -f "$B/$f" ] && $T rm "$B/$f" ;;
	9) f=$(att); [ -f "$B/$f" ] && $T rm "$B/$f" ;;
	10) a=$(dir); [ -n "$a" ] && [ -d "$B/$a" ] && $T rm -rf "$B/$a" ;;
	11) a=$(note); b=$(note); [ -f "$B/$a" ] && $T mkdir -p "$B/$(dirname "$b")" && $T cp "$B/$a" "$B/$b" ;;
	esac
}

same_check() { # online.json offline.json
	node "$(dirname "$0")/same-check.js" "$1" "$2"
}

for round in $(seq "$rounds"); do
	V=$tmp/v$round
	mkdir -p "$V/.obsidian"
	printf 'known #known\n' >"$V/Known.md"
	"$vaultd" --vault "$V" --mount "$M" --grace-ms 200 -f 2>"$tmp/log$round" &
	dpid=$!
	for _ in $(seq 200); do
		grep -q " $M " /proc/mounts && [ -f "$M/Known.md" ] && break
		sleep 0.05
	done
	grep -q " $M " /proc/mounts || { cat "$tmp/log$round"; echo "FAIL: no mount"; exit 1; }
	for _ in $(seq "$ops"); do
		if [ $(pick 4) = 0 ]; then one_op "$V"; else one_op "$M"; fi
	done 2>/dev/null
	sleep 1.5 # the watcher's turn, and the mount's grace period for deletes
	if ! kill -0 "$dpid" 2>/dev/null ||
		! timeout 30 "$vaultctl" --vault "$V" check --json >"$tmp/on.json"; then
		echo "FAIL: round $round (seed $seed): vaultd died or does not answer"
		tail -60 "$tmp/log$round"
		mismatches=$((mismatches + 1))
		kill -9 "$dpid" 2>/dev/null
		umount -l "$M" 2>/dev/null
		dpid=
		continue
	fi
	timeout 30 "$vaultctl" --vault "$V" stop >/dev/null
	wait "$dpid"
	dpid=
	timeout 30 "$vaultctl" --vault "$V" check --offline --json >"$tmp/off.json"
	if ! same_check "$tmp/on.json" "$tmp/off.json"; then
		echo "FAIL: round $round (seed $seed): online check differs from offline"
		mismatches=$((mismatches + 1))
	fi
done
echo "check property: $mismatches mismatches in $rounds rounds of $ops operations (seed $seed)"
[ $mismatches = 0 ]
