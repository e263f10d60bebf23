#!/usr/bin/env bash
# What the InlineURCU trait buys: CTroupe's C layer with liburcu called through its shared
# library (the default) and with liburcu's inline fast paths (_LGPL_SOURCE). Best of 5 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
out=$(mktemp -d)
sources="scripts/cqueue-bench.c Sources/CTroupe/mailbox.c Sources/CTroupe/envelope.c Sources/CTroupe/parking.c Sources/CTroupe/thread.c"
cc -O2 -Iinclude $sources -lurcu-common -lurcu-cds -lpthread -o "$out/dynamic"
cc -O2 -D_LGPL_SOURCE -Iinclude $sources -lurcu-common -lurcu-cds -lpthread -o "$out/inline"
for variant in dynamic inline; do
    best=$(for _ in 1 2 3 4 5; do "$out/$variant"; done | sort -n | head -1)
    echo "$variant: $best"
done
echo "machine: $(nproc) cores, $(uname -srm); $(date -u '+%Y-%m-%d %H:%M UTC')"
rm -rf "$out"
