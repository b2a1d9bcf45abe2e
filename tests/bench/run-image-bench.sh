#!/bin/sh
# Image benchmark: vaultd's idle RSS at N notes (what image support costs
# a daemon that reads no image) and read_attachment's latency for a
# typical PNG and JPEG and a PNG made smaller, through vault-mcp.
#   tests/bench/run-image-bench.sh [BUILD_DIR] [N]
set -eu
exec sh "$(dirname "$0")/node-bench.sh" "${1:-build}" bench-image.mjs "${2:-1000}"
