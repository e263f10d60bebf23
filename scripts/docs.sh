#!/usr/bin/env bash
# Builds the DocC documentation of Troupe and its optional modules, and fails on any warning
# (a broken symbol link, an ambiguous overload reference, a malformed article).
# Output: .build/docs/<Module>.doccarchive. Usage: scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build
graphs="$scratch/symbol-graphs"
rm -rf "$graphs" && mkdir -p "$graphs" "$scratch/docs"
swift package --scratch-path "$scratch" dump-symbol-graph --minimum-access-level public >/dev/null
dumped=$(find "$scratch" -maxdepth 3 -type d -name symbolgraph | head -1)
status=0
for module in Troupe TroupePromises TroupePubSub TroupeSupervision TroupeMetrics TroupeServiceLifecycle TroupeTracing; do
    mkdir -p "$graphs/$module"
    # The module's own graph and its extensions of other modules (Module@Other.symbols.json).
    cp "$dumped/$module.symbols.json" "$graphs/$module/"
    find "$dumped" -name "$module@*.symbols.json" -exec cp {} "$graphs/$module/" \;
    echo "== $module"
    if ! docc convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$graphs/$module" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.troupe.$module" \
        --output-path "$scratch/docs/$module.doccarchive" --warnings-as-errors; then
        status=1
    fi
done
exit $status
