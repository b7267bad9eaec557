import Foundation
import MeridianStore
import Testing

/// The process-wide SQLite setting a store makes before its first connection: memory statistics off (each of
/// SQLite's allocations took a process-wide mutex to count them). Checked in a process of its own, since this
/// test process has opened SQLite connections long before.
@Suite struct SQLiteSetupTests {
    @Test("a store opened first in its process turns SQLite's memory statistics off; after another connection, cannot")
    func memoryStatistics() throws {
        let directory = try TemporaryDirectory()
        let (status, errors) = try ChildProcess.run(
            ChildProcess.helper.path, ["memory-statistics", directory.storePath])
        #expect(status == 0, "\(errors)")
        #expect(errors.hasSuffix("memory statistics off\n"), "\(errors)")
        // SQLite initialized by a plain connection first: it keeps counting (the check can tell the two apart).
        let other = try TemporaryDirectory()
        let (rawStatus, rawErrors) = try ChildProcess.run(
            ChildProcess.helper.path, ["memory-statistics", other.storePath, "raw-first"])
        #expect(rawStatus == 0, "\(rawErrors)")
        #expect(rawErrors.hasSuffix("memory statistics on\n"), "\(rawErrors)")
    }
}
