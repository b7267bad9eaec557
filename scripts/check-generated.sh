#!/usr/bin/env bash
# Fails (exit 1) when the committed code in Sources/MeridianProto/Generated/ is not what Protos/ generates.
#
# Regenerates into a temporary folder with scripts/generate-protos.sh (which builds the pinned protoc plugins into
# .build-protoc/ the first time) and diffs it against the committed files, extra or missing files included.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
committed="$root/Sources/MeridianProto/Generated"
fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT

if ! "$here/generate-protos.sh" --out "$fresh" 2>"$fresh.log"; then
    cat "$fresh.log" >&2
    rm -f "$fresh.log"
    echo "error: generation failed" >&2
    exit 1
fi
rm -f "$fresh.log"

if diff -ru "$committed" "$fresh"; then
    echo "generated code is up to date"
else
    echo "error: Sources/MeridianProto/Generated/ is stale or edited by hand; run scripts/generate-protos.sh" >&2
    exit 1
fi
