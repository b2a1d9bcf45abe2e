#!/bin/sh
# Retrieval quality benchmark: judged queries (descriptive, exact, topic; in
# English, Russian, German, French, Spanish, Chinese, Japanese) through
# search_notes fulltext on a vault of hand-written notes, distractors and
# long notes; hit@1, hit@5, MRR@10, empty results and answer size, for the
# queries as written and with their words joined by AND and by OR.
#   tests/bench/run-quality-bench.sh [BUILD_DIR] [--modes plain,and,or] [--distractors N]
# VERBOSE=1 lists the queries whose answer is not first; BENCH_DIR=DIR
# builds the vault there; QUALITY_JSON=FILE writes every query's results.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
exec sh "$(dirname "$0")/node-bench.sh" "$build" bench-quality.mjs "$@"
