#!/usr/bin/env bash
# Builds the DocC documentation of every library product with swift-docc-plugin
# (`swift package generate-documentation`), and fails on any warning (a broken symbol link, an
# ambiguous overload reference, a malformed article).
# Output: .build/docs/<Module>.doccarchive. Usage: scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/docs
rm -rf "$out" && mkdir -p "$out"
status=0
for module in Troupe TroupePromises TroupePubSub TroupeSupervision TroupeMetrics TroupeServiceLifecycle TroupeTracing TroupeTesting TroupeCluster TroupeClusterTLS TroupePersistence TroupePersistenceSQLite TroupePersistencePostgres; do
    echo "== $module"
    if ! swift package --allow-writing-to-directory "$out" generate-documentation --target "$module" \
        --warnings-as-errors --output-path "$out/$module.doccarchive" 2>&1 | grep -v '^\['; then
        :
    fi
    # (grep's status is not the plugin's: check the archive and the pipeline's first status.)
    if [ "${PIPESTATUS[0]}" != 0 ] || [ ! -d "$out/$module.doccarchive" ]; then
        echo "docs.sh: $module's documentation failed" >&2
        status=1
    fi
done
exit $status
