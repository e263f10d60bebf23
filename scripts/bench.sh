#!/usr/bin/env bash
# Prints the benchmark table (Troupe beside Swift native actors and Dispatch), installing
# liburcu-dev if needed. Extra arguments go to troupe-bench (--quick, --json, --filter NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift run --package-path Benchmarks -c release troupe-bench "$@"
