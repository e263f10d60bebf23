#!/usr/bin/env bash
# Runs Troupe's whole test suite (unit and stress tests), installing liburcu-dev if needed.
# TROUPE_STRESS_MESSAGES raises the stress tests' message count (default 10^7).
# Without arguments it runs in two passes: every suite but TroupeCluster's, then TroupeCluster's
# alone. The cluster suites start node processes, run NIO event loops and fuzz the wire
# decoder; run beside the core's suites on a 2-core machine, they held Swift's cooperative
# pool long enough to push core tests past their time limits. With arguments (a --filter, say)
# it runs `swift test` once with them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ "$#" -gt 0 ]; then
    swift test "$@"
else
    swift test --skip TroupeClusterTests
    swift test --filter TroupeClusterTests
fi
