#!/usr/bin/env bash
# Builds the seed examples once, then runs each program; fails if any of them exits non-zero.
# Usage (from anywhere): bash Examples/SeedExamples/run-all.sh [SWIFT BUILD OPTIONS...]
# The options go to `swift build` (CI passes `-c release --scratch-path Benchmarks/.build`, to
# reuse the release build of Troupe's modules that the benchmarks made).
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
programs=(oscar-sessions actorkit-workers nnkit-observers reactor-flow)

swift build --package-path "$dir" "$@"
bin=$(swift build --package-path "$dir" "$@" --show-bin-path)

failed=()
for name in "${programs[@]}"; do
    echo
    echo "################ $name"
    if "$bin/$name"; then
        echo "################ $name: ok"
    else
        status=$?
        echo "################ $name: FAILED (exit $status)"
        failed+=("$name")
    fi
done

echo
if ((${#failed[@]} > 0)); then
    echo "run-all: ${#failed[@]} of ${#programs[@]} programs failed: ${failed[*]}"
    exit 1
fi
echo "run-all: all ${#programs[@]} programs passed"
