#!/usr/bin/env bash
# Regenerates the Swift code for Protos/ into Sources/MeridianProto/Generated/.
#
#   scripts/generate-protos.sh              regenerate into Sources/MeridianProto/Generated/
#   scripts/generate-protos.sh --out DIR    generate into DIR instead (used by check-generated.sh)
#   scripts/generate-protos.sh --plugins    only build the protoc plugins
#
# The plugins are built from the pinned package versions into a scratch package under .build-protoc/ (gitignored):
# protoc-gen-swift from apple/swift-protobuf 1.39.0 and protoc-gen-grpc-swift-2 from grpc/grpc-swift-protobuf 2.4.1.
# The first build takes several minutes; later runs reuse it. protoc itself is Debian's (package protobuf-compiler).
# Builds run under `nice -n 19` so they don't starve other work on the machine.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$root/Sources/MeridianProto/Generated"
plugins_only=false

while (($#)); do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --plugins) plugins_only=true; shift ;;
        *) echo "usage: $0 [--out DIR] [--plugins]" >&2; exit 2 ;;
    esac
done

# MARK: - Plugins

plugin_package="$root/.build-protoc/plugins"
mkdir -p "$plugin_package/Sources/Placeholder"
cat > "$plugin_package/Package.swift.new" <<'SWIFT'
// swift-tools-version:6.1
// Throwaway package that pins the protoc plugins' versions; written by scripts/generate-protos.sh.
import PackageDescription

let package = Package(
    name: "meridian-protoc-plugins",
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", exact: "2.4.1"),
    ],
    targets: [.target(name: "Placeholder", path: "Sources/Placeholder")]
)
SWIFT
# Rewrite Package.swift only when it changed, so SwiftPM does not re-resolve for nothing.
if ! cmp -s "$plugin_package/Package.swift.new" "$plugin_package/Package.swift"; then
    mv "$plugin_package/Package.swift.new" "$plugin_package/Package.swift"
else
    rm "$plugin_package/Package.swift.new"
fi
[ -f "$plugin_package/Sources/Placeholder/Placeholder.swift" ] ||
    echo "// Placeholder so the plugin package has a target." > "$plugin_package/Sources/Placeholder/Placeholder.swift"

bin_path="$(swift build --package-path "$plugin_package" --show-bin-path)"
protoc_gen_swift="$bin_path/protoc-gen-swift"
protoc_gen_grpc_swift="$bin_path/protoc-gen-grpc-swift-2"

for product in protoc-gen-swift protoc-gen-grpc-swift-2; do
    if [ ! -x "$bin_path/$product" ]; then
        echo "==> building $product (first time only; takes several minutes)" >&2
    fi
    nice -n 19 swift build --package-path "$plugin_package" --product "$product" >&2
done

if $plugins_only; then exit 0; fi

# MARK: - Generation

command -v protoc >/dev/null || {
    echo "error: protoc not found; install Debian's protobuf-compiler (apt-get install -y protobuf-compiler)" >&2
    exit 1
}

protos=()
while IFS= read -r proto; do protos+=("$proto"); done < <(cd "$root/Protos" && find . -name '*.proto' | sed 's|^\./||' | sort)

mkdir -p "$out"
rm -f "$out"/*.pb.swift "$out"/*.grpc.swift

options=("Visibility=Package" "UseAccessLevelOnImports=true" "FileNaming=DropPath")
swift_args=("--plugin=protoc-gen-swift=$protoc_gen_swift" "--swift_out=$out")
grpc_args=("--plugin=protoc-gen-grpc-swift-2=$protoc_gen_grpc_swift" "--grpc-swift-2_out=$out")
for option in "${options[@]}"; do
    swift_args+=("--swift_opt=$option")
    grpc_args+=("--grpc-swift-2_opt=$option")
done

(
    cd "$root/Protos"
    protoc --proto_path=. "${swift_args[@]}" "${protos[@]}"
    protoc --proto_path=. "${grpc_args[@]}" "${protos[@]}"
)
echo "generated $(ls "$out" | wc -l) files in ${out#"$root"/}" >&2
