import Foundation
import MeridianCore
import MeridianStore
import Testing

@Suite struct OpenErrorTests {
    @Test("opening a store in a directory that does not exist says so")
    func missingDirectory() throws {
        let path = NSTemporaryDirectory() + "meridian-missing-\(UUID().uuidString)/data/store.sqlite"
        let error = #expect(throws: StoreError.self) { try Store.open(path: path, schema: Fixtures.schema()) }
        #expect(error?.code == .io)
        #expect(error?.message.hasSuffix("/data' does not exist") == true, "\(error?.message ?? "")")
    }

    @Test("opening a store under a file that is not a directory says so")
    func notADirectory() throws {
        let file = NSTemporaryDirectory() + "meridian-file-\(UUID().uuidString)"
        try Data().write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let error = #expect(throws: StoreError.self) {
            try Store.open(path: file + "/store.sqlite", schema: Fixtures.schema())
        }
        #expect(error?.message.hasSuffix("'\(file)' is not a directory") == true, "\(error?.message ?? "")")
    }
}
