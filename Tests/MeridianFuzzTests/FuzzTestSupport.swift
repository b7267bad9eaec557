// Shared by the fuzz tests: the seed, the built `meridian` binary, the corpus folder.

import Foundation
import Testing

enum FuzzFixtures {
    /// `MERIDIAN_SEED` when set (to replay a failure), otherwise a fixed seed so CI runs the same inputs every time.
    static let seed: UInt64 = ProcessInfo.processInfo.environment["MERIDIAN_SEED"].flatMap { UInt64($0) } ?? 20_261_122

    /// The package root (two levels above this file).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The built `meridian` binary (the test target depends on it, so it is built with the tests).
    static let meridian: String = {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
            Bundle.main.bundleURL.deletingLastPathComponent().path,
            root + "/.build/debug",
        ]
        let folder =
            candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/meridian") } ?? candidates[2]
        return folder + "/meridian"
    }()

    /// ``meridian``, which must be built: missing, it fails the test that needs it, never skips it.
    static func builtMeridian() throws -> String {
        try #require(FileManager.default.isExecutableFile(atPath: meridian), "\(meridian) is not built")
        return meridian
    }

    /// The regression corpus, copied into the test bundle.
    static var corpus: String {
        Bundle.module.resourcePath.map { $0 + "/Corpus" } ?? root + "/Tests/MeridianFuzzTests/Corpus"
    }

    /// A temporary executable shell script with `body`, for tests that need a misbehaving `meridian`.
    static func script(_ body: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-\(UUID().uuidString).sh").path
        try Data("#!/bin/sh\n\(body)\n".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        return path
    }
}
