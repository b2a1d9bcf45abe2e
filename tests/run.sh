#!/bin/sh
# vaultd's two entry points (see README.md):
#   tests/run.sh demo   install what is missing, build, run on the example vault
#   tests/run.sh test   install what is missing, build, run every test
set -eu
cd "$(dirname "$0")/.."
cmd=${1:-}
case "$cmd" in
demo | test) ;;
*)
	echo "usage: tests/run.sh demo | test" >&2
	exit 2
	;;
esac

sh tests/deps.sh "$cmd"

build() { # dir [meson options...]
	dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
}

case "$cmd" in
demo)
	build build
	exec sh tests/demo.sh build
	;;
test)
	build build
	# The official MCP SDK client for the end-to-end tests (pinned).
	npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error >/dev/null
	meson test -C build --print-errorlogs --num-processes 2
	# The Debian package (built from meson with prefix /usr and Debian's
	# flags, checked by lintian, installed and removed again as root) and
	# the Claude Desktop extension bundle made from its programs with the
	# official mcpb tool.
	deb=$(sh systemd/deb.sh build-deb)
	sh tests/test-deb.sh "$deb" tests/example-vault
	bundle=$(sh mcp/mcpb/pack.sh build-deb)
	version=$(meson introspect --projectinfo build-deb |
		sed -n 's/.*"version": *"\([^"]*\)".*/\1/p')
	sh tests/test-mcpb.sh "$bundle" "$version" build-deb/deb-root/usr/bin/vaultctl \
		tests/example-vault
	# The unit and end-to-end tests again under AddressSanitizer +
	# UndefinedBehaviorSanitizer (leak detection on): every daemon and
	# vault-mcp the tests start is instrumented and aborts on an error.
	# Each sanitizer reads its own options and ignores the others'.
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
	export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
	build build-asan -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug
	meson test -C build-asan --suite unit --suite mount --suite e2e \
		--suite stress --print-errorlogs --num-processes 2
	# Every kind of work at once under ThreadSanitizer, and the mount's
	# parallel requests: no data race, no lock taken in two orders.
	build build-tsan -Db_sanitize=thread -Dbuildtype=debug
	meson test -C build-tsan stress mount --print-errorlogs \
		--num-processes 2
	# The control socket's workers, lanes and cancellation under it too:
	# every daemon the limits test starts is instrumented.
	sh tests/mcp/run.sh build-tsan limits.test.mjs
	# The long battery (VAULTD_SANITIZE_ALL=1, about an hour on 2 cores):
	# every other suite under AddressSanitizer + UBSan too, and every
	# suite under ThreadSanitizer.
	if [ -n "${VAULTD_SANITIZE_ALL:-}" ]; then
		meson test -C build-asan --suite cli --suite hostile \
			--print-errorlogs --num-processes 2
		meson test -C build-tsan --no-suite style \
			--print-errorlogs --num-processes 2 --timeout-multiplier 4
	fi
	echo "all tests passed"
	;;
esac
