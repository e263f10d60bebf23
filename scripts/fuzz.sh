#!/usr/bin/env bash
# Fuzzes TroupeCluster's decoders of untrusted bytes (frames, envelopes, BinaryClusterCoder
# arguments, the handshake state machine) with libFuzzer and AddressSanitizer, starting from the
# committed corpus (Tests/TroupeClusterFuzz/Corpus). See Tests/TroupeClusterFuzz/FuzzMain.swift.
#
# Usage: scripts/fuzz.sh [--debug] [SECONDS]   fuzz for SECONDS (default 60)
#        scripts/fuzz.sh --replay              replay the corpus through a normal build (no fuzzer)
#        scripts/fuzz.sh --merge DIR...        add to the corpus the fewest inputs of DIR... that
#                                              reach the code it does not (libFuzzer's merge, by
#                                              edges only: hit counts would keep 3x the files)
#
# The fuzz binary is built in its own scratch path, .build-fuzz, with
# `-sanitize=fuzzer,address -DTROUPE_LIBFUZZER`: optimized (release with -enable-testing, for
# the `@testable import`; about 15x the executions of -Onone) unless --debug, which builds it
# -Onone (Swift's `assert`s on, everything else the same). New inputs go to a temporary
# directory, printed at the end, never to the committed corpus. Exits non-zero on a crash, a
# leak, a timeout or memory exhaustion, and prints the input that caused it.
# FUZZ_BUILD_LOCK=FILE runs the builds under `flock FILE` (a machine whose builds share a lock).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=Tests/TroupeClusterFuzz/Corpus
sanitizers=(-Xswiftc -sanitize=fuzzer,address -Xswiftc -DTROUPE_LIBFUZZER)

build() {
    if [ -n "${FUZZ_BUILD_LOCK:-}" ]; then
        flock "$FUZZ_BUILD_LOCK" swift build "$@"
    else
        swift build "$@"
    fi
}

# Builds the fuzz binary ($1: release or debug) and sets $fuzzer to its path.
build_fuzzer() {
    if [ "$1" = debug ]; then
        build --scratch-path .build-fuzz --product troupe-cluster-fuzz "${sanitizers[@]}" >&2
    else
        build --scratch-path .build-fuzz -c release --product troupe-cluster-fuzz \
            -Xswiftc -enable-testing "${sanitizers[@]}" >&2
    fi
    fuzzer=.build-fuzz/$1/troupe-cluster-fuzz
}

case "${1:-}" in
--replay)
    build --product troupe-cluster-fuzz >&2
    "$(build --show-bin-path)/troupe-cluster-fuzz" "$corpus"
    exit 0
    ;;
--merge)
    shift
    [ $# -gt 0 ] || { sed -n '6,10p' "$0"; exit 2; }
    build_fuzzer release
    "$fuzzer" -set_cover_merge=1 -use_counters=0 -rss_limit_mb=2048 -max_len=65536 "$corpus" "$@"
    echo "corpus: $(find "$corpus" -type f | wc -l) files, $(find "$corpus" -type f -exec cat {} + | wc -c) bytes"
    exit 0
    ;;
--debug)
    config=debug
    shift
    ;;
*)
    config=release
    ;;
esac
seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ ]] || { sed -n '6,10p' "$0"; exit 2; }

build_fuzzer "$config"
work=$(mktemp -d /tmp/troupe-fuzz-XXXXXX)
mkdir -p "$work/new" "$work/crashes"
echo "# scripts/fuzz.sh ${config} ${seconds}s, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(swift --version 2>/dev/null | head -1)"
# The first directory receives the new inputs; the corpus is only read.
set +e
"$fuzzer" "$work/new" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$work/crashes/" 2>&1 | tee "$work/log"
status=${PIPESTATUS[0]}  # the fuzzer's, not tee's
set -e
if [ "$status" != 0 ] || [ -n "$(ls -A "$work/crashes")" ]; then
    echo "fuzz.sh: the fuzzer failed (status $status); log: $work/log" >&2
    for input in "$work/crashes"/*; do
        [ -e "$input" ] || continue
        echo "fuzz.sh: crashing input: $input (reproduce: $fuzzer $input)" >&2
    done
    exit 1
fi
echo "fuzz.sh: no crash; $(find "$work/new" -type f | wc -l) new inputs in $work/new" \
    "(add the useful ones to the corpus: scripts/fuzz.sh --merge $work/new)"
