#!/usr/bin/env bash
# Builds and runs Troupe's peer benchmarks (CAF and Erlang/OTP); see README.md beside this file.
#
#   run.sh [Workload=SIZE ...]
#
# e.g. run.sh PingPong=2000000 Counting=10000000 ThreadRing=5000000 ForkJoinCreation=500000 \
#             Fibonacci=27 MemoryPerIdleActor=100000
# With no arguments: quick sizes. stdout carries only `version ...`, `skip ...` and
# `peer <SYSTEM> <Workload> <units> <seconds> <check> <expected>` lines; everything else goes
# to stderr. A peer whose package is missing is skipped (exit 0); a failed build, a failed run
# or a wrong result exits 1 (after the other runs). PEERS_TIMEOUT: seconds per run (600).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(cd "$here/.." && pwd)/.build/peers"
timeout_seconds="${PEERS_TIMEOUT:-600}"
export ERL_CRASH_DUMP="$out/erl_crash.dump"  # if the VM crashes, not into the caller's directory
workloads=(PingPong Counting ThreadRing ForkJoinCreation Fibonacci MemoryPerIdleActor)

error() { echo "peers: $*" >&2; }

# -- Arguments ------------------------------------------------------------------------------
if [ $# -eq 0 ]; then
  set -- PingPong=10000 Counting=50000 ThreadRing=20000 ForkJoinCreation=5000 Fibonacci=15 \
    MemoryPerIdleActor=10000
fi
runs=()
for arg in "$@"; do
  name="${arg%%=*}" size="${arg#*=}"
  if [[ "$arg" != *=* || ! " ${workloads[*]} " =~ " $name " || ! "$size" =~ ^[1-9][0-9]*$ ]]; then
    error "bad argument '$arg': expected Workload=SIZE, Workload one of: ${workloads[*]}"
    exit 64
  fi
  runs+=("$name $size")
done

mkdir -p "$out"
failed=0

# Whether $2 must be (re)built from $1: it is missing or older than its source.
stale() { [ ! -e "$2" ] || [ "$1" -nt "$2" ]; }

# Runs one program and passes on its result lines; anything else it prints goes to stderr.
run() {
  local label="$1"
  shift
  local lines status
  lines="$(timeout -k 10 "$timeout_seconds" "$@" </dev/null)"
  status=$?
  grep -vE '^(peer|version) |^$' <<<"$lines" >&2
  # Result lines go to stdout only from a run that succeeded (a wrong result exits 1).
  if [ $status -eq 0 ]; then
    grep -E '^(peer|version) ' <<<"$lines"
  else
    grep -E '^(peer|version) ' <<<"$lines" | sed "s/^/peers: $label printed: /" >&2
  fi
  if [ $status -eq 124 ]; then
    error "$label: timed out after $timeout_seconds s"
    failed=1
  elif [ $status -ne 0 ]; then
    error "$label: failed with status $status"
    failed=1
  elif ! grep -qE '^(peer|version) ' <<<"$lines"; then
    error "$label: printed no result"
    failed=1
  fi
}

# -- Build ----------------------------------------------------------------------------------
caf="$out/caf-peers"
if ! command -v g++ >/dev/null; then
  echo "skip CAF: g++ not found"
  caf=""
elif ! echo '#include <caf/all.hpp>' | g++ -std=c++17 -E -x c++ - >/dev/null 2>&1; then
  echo "skip CAF: CAF's headers not found (apt-get install libcaf-dev)"
  caf=""
elif stale "$here/caf/peers.cpp" "$caf"; then
  error "building $caf"
  if g++ -O2 -std=c++17 -o "$caf.tmp" "$here/caf/peers.cpp" -lcaf_core -pthread; then
    mv "$caf.tmp" "$caf"
  else
    error "CAF: build failed (g++ -O2 -std=c++17 ... -lcaf_core -pthread)"
    rm -f "$caf.tmp"
    caf=""
    failed=1
  fi
fi

erlang="$out/peers.beam"
if ! command -v erl >/dev/null || ! command -v erlc >/dev/null; then
  echo "skip Erlang: erl or erlc not found (apt-get install erlang-base)"
  erlang=""
elif stale "$here/erlang/peers.erl" "$erlang"; then
  error "building $erlang"
  if ! erlc -o "$out" "$here/erlang/peers.erl"; then
    error "Erlang: build failed (erlc)"
    rm -f "$erlang"
    erlang=""
    failed=1
  fi
fi

# erl's flags: 2 schedulers, and a process limit that fits the workload's live processes
# (Fibonacci's tree can be alive almost whole; the default limit is 262,144).
erl_run() {
  local workload="$1" size="$2" processes="$2"
  if [ "$workload" = Fibonacci ]; then
    local a=0 b=1 i
    for ((i = 0; i < size + 1; i++)); do
      local c=$((a + b))
      a=$b b=$c
    done
    processes=$((2 * a - 1))
  fi
  local limit=$((processes + 10000))
  [ $limit -lt 262144 ] && limit=262144
  run "Erlang $workload=$size" erl -noshell +S 2:2 +P "$limit" -pa "$out" -run peers main "$workload" "$size"
}

# -- Run ------------------------------------------------------------------------------------
[ -n "$caf" ] && run "CAF version" "$caf" version
[ -n "$erlang" ] && run "Erlang version" erl -noshell -pa "$out" -run peers main version
for entry in "${runs[@]}"; do
  read -r workload size <<<"$entry"
  [ -n "$caf" ] && run "CAF $workload=$size" "$caf" "$workload" "$size"
  [ -n "$erlang" ] && erl_run "$workload" "$size"
done

if [ $failed -ne 0 ]; then
  error "some peer builds or runs failed (see above)"
  exit 1
fi
exit 0
