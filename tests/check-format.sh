#!/bin/sh
# Every C file is formatted by the one .clang-format (kernel style).
set -eu
cd "$(dirname "$0")/.."
bad=0
for f in $(find common fs mcp tests -name '*.[ch]' -not -path '*/node_modules/*'); do
	if ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "not formatted: $f (run: clang-format -i $f)" >&2
		bad=1
	fi
done
exit $bad
