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
        .executable(name: "meridian-bench", targets: ["meridian-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
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
                "MeridianCore",
                "MeridianStore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),

        // The authoritative SQLite store: migration, change capture, transactions, snapshots, the change log.
        .target(
            name: "MeridianStore",
            dependencies: [
                "MeridianCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Store tests against in-memory and on-disk databases, raw SQLite writers and crash recovery.
        .testTarget(
            name: "MeridianStoreTests",
            dependencies: ["MeridianStore", "MeridianCore"],
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

        // Benchmarks, one subcommand per part (`meridian-bench store`); run in release.
        .executableTarget(
            name: "meridian-bench",
            dependencies: [
                "MeridianStore",
                "MeridianCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
