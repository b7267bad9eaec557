// swift-tools-version:6.1
import PackageDescription

/// One settings array for every target, tests included (copied from grpc-swift-2 2.4.3).
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "meridian",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MeridianCore", targets: ["MeridianCore"]),
        .library(name: "MeridianStore", targets: ["MeridianStore"]),
        .library(name: "MeridianServer", targets: ["MeridianServer"]),
        .library(name: "MeridianAuth", targets: ["MeridianAuth"]),
        .executable(name: "meridian-server", targets: ["meridian-server"]),
        .library(name: "MeridianClient", targets: ["MeridianClient"]),
        .executable(name: "meridian-bench", targets: ["meridian-bench"]),
        .executable(name: "meridian", targets: ["meridian"]),
        .executable(name: "meridian-check", targets: ["meridian-check"]),
        .library(name: "MeridianFuzz", targets: ["MeridianFuzz"]),
        .executable(name: "meridian-fuzz", targets: ["meridian-fuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Schema, values, predicates, sort order and change-set algebra: pure Swift, no I/O.
        .target(
            name: "MeridianCore",
            dependencies: [.product(name: "Yams", package: "Yams")],
            swiftSettings: swiftSettings
        ),
        // Unit, property and differential tests of the core (the differential tests run SQLite through GRDB).
        .testTarget(
            name: "MeridianCoreTests",
            dependencies: [
                "MeridianProcessIO",
                "MeridianCore",
                "MeridianStore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),

        // `sqlite3_db_config`, which Swift cannot call (it is variadic), for the one setting the store needs.
        .target(
            name: "CMeridianSQLite",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // The authoritative SQLite store: migration, change capture, transactions, snapshots, the change log.
        .target(
            name: "MeridianStore",
            dependencies: [
                "CMeridianSQLite",
                "MeridianCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Store tests against in-memory and on-disk databases, raw SQLite writers and crash recovery.
        .testTarget(
            name: "MeridianStoreTests",
            dependencies: [
                "MeridianProcessIO", "MeridianStore", "MeridianCore", .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),

        // The wire contract: code generated from Protos/ (committed) and conversions to and from MeridianCore types.
        .target(
            name: "MeridianProto",
            dependencies: [
                "MeridianCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        // Round trips of values, rows, schemas and operations through the wire types and their bytes.
        .testTarget(
            name: "MeridianProtoTests",
            dependencies: [
                "MeridianProto",
                "MeridianCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),

        // Identities: JWT verification (jwt-kit) with keys from PEM, JWKS or a shared secret, API keys by digest, and
        // development tokens. Shared by the server (verifying) and the CLI (`meridian token issue`).
        .target(
            name: "MeridianAuth",
            dependencies: [
                "MeridianCore",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        // The gRPC service: subscriptions, fan-out, snapshots, resume, flow control, limits, metrics.
        .target(
            name: "MeridianServer",
            dependencies: [
                "MeridianCore",
                "MeridianStore",
                "MeridianProto",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCInProcessTransport", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "MeridianAuth",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCertificateReloading", package: "swift-nio-extras"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        // The server in-process and over loopback: snapshots, deltas, resume, flow control, errors, Python and CLI.
        .testTarget(
            name: "MeridianServerTests",
            dependencies: [
                "MeridianProcessIO",
                "MeridianServer",
                "MeridianAdmin",
                .product(name: "Prometheus", package: "swift-prometheus"),
                "MeridianAuth",
                .product(name: "Crypto", package: "swift-crypto"),
                "MeridianTestSupport",
                "MeridianCore",
                "MeridianStore",
                "MeridianProto",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCInProcessTransport", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),

        // The admin endpoint (`meridian-server --admin`): Prometheus metrics (swift-prometheus as the swift-metrics
        // backend), /healthz and /readyz, and a status page, served over HTTP by hummingbird.
        .target(
            name: "MeridianAdmin",
            dependencies: [
                "MeridianServer",
                "MeridianCore",
                "MeridianStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // Helpers shared by the server, client and integration tests: a real server on 127.0.0.1:0 that always stops.
        .target(
            name: "MeridianTestSupport",
            dependencies: [
                "MeridianServer",
                "MeridianAuth",
                "MeridianCore",
                "MeridianStore",
                "MeridianProto",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCInProcessTransport", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),

        // Reading child processes' pipes without the fatal error Foundation raises when a read meets EINTR; and
        // starting them without the over-read that crashes Foundation's `Process.run()` (CMeridianProcessIO).
        .target(
            name: "MeridianProcessIO",
            dependencies: ["CMeridianProcessIO"],
            swiftSettings: swiftSettings
        ),
        // `readdir` handing out whole records, for every executable that links MeridianProcessIO.
        .target(name: "CMeridianProcessIO", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // The allocator's bytes in use (glibc's `mallinfo2`), for the benchmarks' memory figures.
        .target(name: "CMeridianHeap"),

        // What the server, checker and fuzzer executables share: usage errors exit with status 2.
        .target(
            name: "MeridianCommandLine",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swiftSettings
        ),

        // The server executable: parse arguments, build the configuration, bootstrap logging, run.
        .executableTarget(
            name: "meridian-server",
            dependencies: [
                "MeridianCommandLine",
                "MeridianAdmin",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                "MeridianAuth",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "MeridianServer",
                "MeridianCore",
                "MeridianStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // The client library: connection, cache context, results controllers, list and map models. GRDB is used only
        // for the persisted cache file, inside Internal/Persistence/ (the client must not depend on MeridianStore).
        .target(
            name: "MeridianClient",
            dependencies: [
                "MeridianCore",
                "MeridianProto",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        // Cache context, controllers, list and map models fed decoded protocol messages; real-server tests.
        .testTarget(
            name: "MeridianClientTests",
            dependencies: [
                "MeridianClient",
                "MeridianAuth",
                "MeridianCore",
                "MeridianProto",
                "MeridianServer",
                "MeridianStore",
                "MeridianTestSupport",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),

        // A child process for the store tests: a Store writer to kill -9, and a plain SQLite connection (no Meridian).
        .executableTarget(
            name: "meridian-store-testhelper",
            dependencies: [
                "MeridianStore",
                "MeridianCore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),

        // The demo behind `./meridian.sh demo`: a store, a writer and a live results engine following the change log.
        .executableTarget(
            name: "meridian-demo",
            dependencies: [
                "MeridianStore",
                "MeridianCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // Benchmarks, one subcommand per part (`meridian-bench store`); run in release.
        .executableTarget(
            name: "meridian-bench",
            dependencies: [
                "CMeridianHeap",
                "MeridianProcessIO",
                "MeridianAuth",
                "MeridianClient",
                "MeridianStore",
                "MeridianCore",
                "MeridianServer",
                "MeridianProto",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The `meridian` command-line client: commands, value parsing, formats and rendering (testable as a library).
        .target(
            name: "MeridianCLI",
            dependencies: [
                "MeridianProcessIO",
                "MeridianClient",
                "MeridianAuth",
                "MeridianCore",
                "MeridianProto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Unit tests of the CLI's parsing and rendering, and end-to-end tests that run the built binaries.
        .testTarget(
            name: "MeridianCLITests",
            dependencies: [
                "MeridianProcessIO",
                "MeridianCLI",
                "MeridianClient",
                "MeridianCore",
                "MeridianProto",
                "meridian",
                "meridian-server",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ],
            swiftSettings: swiftSettings
        ),

        // The consistency checker's logic: workload, client and writer roles, the log oracle, faults, the soak.
        .target(
            name: "MeridianCheck",
            dependencies: [
                "MeridianProcessIO",
                "MeridianAuth",
                "MeridianClient",
                "MeridianFuzz",
                "MeridianStore",
                "MeridianCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Runs the built meridian-check (a short seeded soak with faults, and its self-test) and unit-tests its parts.
        .testTarget(
            name: "MeridianCheckTests",
            dependencies: [
                "MeridianProcessIO",
                "MeridianCheck",
                "MeridianCore",
                "meridian-check",
                "meridian-server",
            ],
            swiftSettings: swiftSettings
        ),
        // The checker executable: `meridian-check` (soak), `meridian-check client`, `meridian-check writer`.
        .executableTarget(
            name: "meridian-check",
            dependencies: [
                "MeridianCommandLine",
                "MeridianCheck",
                "MeridianCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The `meridian` executable: parses arguments and runs a MeridianCLI command.
        .executableTarget(
            name: "meridian",
            dependencies: ["MeridianCLI"],
            swiftSettings: swiftSettings
        ),

        // Seeded fuzz campaigns: mutated gRPC messages against a live server, predicate, schema and apply-script text.
        .target(
            name: "MeridianFuzz",
            dependencies: [
                "MeridianProcessIO",
                "MeridianAuth",
                "MeridianCore",
                "MeridianProto",
                "MeridianStore",
                "MeridianServer",
                "MeridianCLI",
                "MeridianTestSupport",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Each campaign for a fixed seed and a bounded number of inputs, the harness's own checks, and the corpus.
        .testTarget(
            name: "MeridianFuzzTests",
            dependencies: [
                "MeridianFuzz",
                "MeridianCore",
                "MeridianProto",
                "meridian",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            resources: [.copy("Corpus")],
            swiftSettings: swiftSettings
        ),

        // `meridian-fuzz`: runs the fuzz campaigns for a duration and prints a summary (non-zero exit on a failure).
        .executableTarget(
            name: "meridian-fuzz",
            dependencies: [
                "MeridianCommandLine",
                "MeridianFuzz",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
