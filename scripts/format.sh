#!/usr/bin/env bash
# Formats every Swift file with the toolchain's swift-format and the committed .swift-format,
# skipping what .swiftformatignore lists (generated code). `--lint` only reports.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=format
[ "${1:-}" = "--lint" ] && mode=lint
# Tracked files and new ones not yet added (but not ignored ones): a new file is checked before its first commit.
files=$(git ls-files --cached --others --exclude-standard '*.swift' | grep -v -F -f .swiftformatignore || true)
[ -n "$files" ] || exit 0
if [ "$mode" = lint ]; then
    swift format lint --strict $files
else
    swift format --in-place $files
fi
