#!/usr/bin/env bash
# Builds the DocC documentation of every library product with swift-docc-plugin
# (`swift package generate-documentation`), and fails on any warning (a broken symbol link, an
# ambiguous overload reference, a malformed article).
# Output: .build/docs/<Module>.doccarchive. Usage: scripts/docs.sh [MODULE...] (default: all)
#
# One plugin invocation for every module: each invocation builds the plugin's snippet tool and
# its dependencies' symbol graphs again (~20 s per module on CI's 2 cores, done once here).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/docs
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
    modules=(Troupe TroupePromises TroupePubSub TroupeSupervision TroupeMetrics TroupeServiceLifecycle TroupeTracing
        TroupeTesting TroupeCluster TroupeClusterTLS TroupePersistence TroupePersistenceSQLite TroupePersistencePostgres
        TroupeVirtualActors TroupeClusterEntities TroupeClusterMembership TroupeClusterSimulator TroupeObserver
        TroupeObserverTLS)
fi
rm -rf "$out" && mkdir -p "$out"
targets=()
for module in "${modules[@]}"; do targets+=(--target "$module"); done
# With several modules the plugin puts each archive in the output directory; with one it writes
# that archive's contents to the output path itself.
output=$out
if [ ${#modules[@]} -eq 1 ]; then output=$out/${modules[0]}.doccarchive; fi
status=0
log=$(mktemp)
set +e
swift package --allow-writing-to-directory "$out" generate-documentation "${targets[@]}" \
    --warnings-as-errors --output-path "$output" >"$log" 2>&1
plugin_status=$?
set -e
grep -v '^\[' "$log" || true
rm -f "$log"
if [ "$plugin_status" != 0 ]; then
    echo "docs.sh: swift package generate-documentation failed (status $plugin_status)" >&2
    status=1
fi
for module in "${modules[@]}"; do
    archive=$out/$module.doccarchive
    if [ ! -f "$archive/metadata.json" ]; then
        echo "docs.sh: $module's documentation failed (no $archive)" >&2
        status=1
    fi
done
exit $status
