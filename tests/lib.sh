# Shared by the shell tests (sourced): absolute paths, a temp folder with
# a mount point $M, a cleanup at exit that kills the daemon ($dpid) and
# unmounts, and failure counting. A test that has more to clean defines
# cleanup_more.
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
cleanup() {
	[ -n "${dpid:-}" ] && kill -9 "$dpid" 2>/dev/null
	umount -l "$M" 2>/dev/null
	type cleanup_more >/dev/null 2>&1 && cleanup_more
	rm -rf "$tmp"
}
make_tmp() {
	tmp=$(mktemp -d)
	M=$tmp/mnt
	trap cleanup EXIT
}
