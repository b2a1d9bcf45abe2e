#!/bin/sh
# Mount benchmark (mount issue): the vault folder natively against vaultd's
# guarded mount of it, in one run.
#   tests/bench/run-mount-bench.sh [BUILD_DIR]
set -eu
build=$(cd "${1:-build}" && pwd)
work=${BENCH_DIR:-${TMPDIR:-/tmp}/vaultd-mount-bench}
[ -e /dev/fuse ] || { echo "no /dev/fuse"; exit 77; }
rm -rf "$work"
mkdir -p "$work/vault/files" "$work/vault/notes" "$work/mnt" "$work/run"
i=0
while [ $i -lt 10000 ]; do
	printf 'x\n' >"$work/vault/files/$(printf 'f%05d.txt' $i)"
	i=$((i + 1))
done
i=0
while [ $i -lt 2000 ]; do
	printf -- '---\ntags: [bench]\n---\n# n%d\n\nSome text of a small note, [[n%04d]].\n' \
		$i $(( (i + 1) % 2000 )) >"$work/vault/notes/$(printf 'n%04d.md' $i)"
	i=$((i + 1))
done
head -c $((256 * 1024 * 1024)) /dev/urandom >"$work/vault/big.bin"
XDG_RUNTIME_DIR="$work/run" "$build/fs/vaultd" --vault "$work/vault" \
	--mount "$work/mnt" -f 2>"$work/vaultd.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 200); do grep -q " $work/mnt " /proc/mounts && ls "$work/mnt" >/dev/null 2>&1 && break; sleep 0.05; done
"$build/tests/bench/bench_mount" "$work/vault" "$work/mnt"
