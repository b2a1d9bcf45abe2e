#!/bin/sh
# History benchmark (history issue): on a copy of a generated 10k-note
# vault, 10,000 small edits (1,000 to one note), each committed on its
# own; prints what history adds to a write, the commit cost, the history's
# size, and get_note_history on the note with 1,000 versions.
#   tests/bench/run-history-bench.sh [BUILD_DIR] [NOTES] [EDITS]
set -eu
build=${1:-build}
notes=${2:-10000}
edits=${3:-10000}
work=${BENCH_DIR:-${TMPDIR:-/tmp}/vaultd-bench}
mkdir -p "$work"
src="$work/vault-$notes"
if [ ! -f "$src/.generated" ]; then
	rm -rf "$src"
	"$build/tests/bench/gen_vault" "$src" "$notes" 1 >/dev/null
	touch "$src/.generated"
fi
copy="$work/history-$notes"
rm -rf "$copy"
cp -a "$src" "$copy"
rm -rf "$copy/.vaultd"
echo "== history on $notes notes, $edits edits ($copy)"
"$build/tests/bench/bench_history" "$copy" "$edits"
rm -rf "$copy"
