#!/usr/bin/env bash
# The API-breakage check: compares the public API of every library product with the last
# release's (swift package diagnose-api-breaking-changes, which runs swift-api-digester) and
# fails on a break that is not accepted.
#
# Usage: scripts/api-check.sh            check (CI)
#        scripts/api-check.sh --record   after tagging a release: rewrite the baseline
#
# scripts/api-baseline/RELEASE names the last release and its commit. Its API, as the digester
# dumped it, is kept in scripts/api-baseline/<release>.tar.gz, so that the check builds only the
# current tree (warm after the tests) instead of the release too (about 4 minutes here).
# scripts/api-baseline/allowed-breaks.txt holds the breaks accepted since that release, one
# digester message per line; each must be written in CHANGELOG.md with what to do, and the file
# is emptied when the next release is tagged.
set -euo pipefail
cd "$(dirname "$0")/.."

read -r release commit < scripts/api-baseline/RELEASE
products=(Troupe TroupePromises TroupePubSub TroupeSupervision TroupeMetrics TroupeServiceLifecycle
          TroupeTracing TroupeTesting TroupeCluster)
archive="scripts/api-baseline/$release.tar.gz"
baseline=$(mktemp -d)
trap 'rm -rf "$baseline"' EXIT

if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "api-check: the release commit $commit ($release) is not in this clone's history" >&2
    exit 1
fi

if [[ "${1:-}" == "--record" ]]; then
    swift package diagnose-api-breaking-changes "$commit" --products "${products[@]}" \
        --baseline-dir "$baseline" --regenerate-baseline || true
    tar czf "$archive" -C "$baseline" .
    echo "api-check: recorded the API of $release ($commit) in $archive"
    exit 0
fi

tar xzf "$archive" -C "$baseline"
for product in "${products[@]}"; do
    if [[ ! -f "$baseline/$commit/$product.json" ]]; then
        echo "api-check: $archive has no baseline for $product; run scripts/api-check.sh --record" >&2
        exit 1
    fi
done
echo "api-check: public API against $release ($commit), ${#products[@]} products"
swift package diagnose-api-breaking-changes "$commit" --products "${products[@]}" \
    --baseline-dir "$baseline" --breakage-allowlist-path scripts/api-baseline/allowed-breaks.txt \
    2> >(grep -v "found .* file(s) which are unhandled\|^    /" >&2)
