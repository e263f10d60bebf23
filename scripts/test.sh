#!/usr/bin/env bash
# Runs Troupe's whole test suite (unit and stress tests), installing liburcu-dev if needed.
# TROUPE_STRESS_MESSAGES raises the stress tests' message count (default 10^7).
# Without arguments it runs in two passes: every suite but TroupeCluster's (and its SWIM
# state machine's), one test at a time, then those. Run in parallel on a 2-core machine, the
# suites starve each other: CI saw Swift's cooperative pool held for 30 s at the start of the
# run, and core tests with time limits (a shutdown deadline, a plugin's ask) failed. With
# arguments (a --filter, say) it runs `swift test` once with them.
# TROUPE_TEST_TIME_LIMIT=SECONDS (CI sets it) stops each test run that takes longer, after the
# build, and fails: a test that hangs then fails the run where it hangs, its output line-buffered
# so that the last test started is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
limit=${TROUPE_TEST_TIME_LIMIT:-}
run() {
    [ -n "$limit" ] || { "$@"; return; }
    local status=0
    timeout --kill-after=20 "$limit" stdbuf -oL -eL "$@" || status=$?
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then
        echo "test.sh: TIMED OUT: '$*' ran over TROUPE_TEST_TIME_LIMIT=$limit s; the last test started above hangs" >&2
        return 1  # not timeout's 124: a caller's own timeout would take it for its own
    fi
    return "$status"
}
if [ "$#" -gt 0 ]; then
    run swift test "$@"  # the limit includes the build here
else
    swift build --build-tests
    run swift test --skip-build --no-parallel --skip TroupeCluster
    run swift test --skip-build --filter TroupeCluster
fi
