#!/usr/bin/env bash
# Runs Troupe's whole test suite (unit and stress tests), installing liburcu-dev if needed.
# TROUPE_STRESS_MESSAGES raises the stress tests' message count (default 10^7).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift test "$@"
