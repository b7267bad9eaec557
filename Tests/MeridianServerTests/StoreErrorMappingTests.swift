// How store errors reach a client: a disk that cannot be written is UNAVAILABLE with SQLite's reason, not INTERNAL.

import MeridianProto
import MeridianStore
import Testing

@testable import MeridianServer

@Suite struct StoreErrorMappingTests {
    @Test("a transaction that failed on the disk is UNAVAILABLE with the reason; a conflict stays a conflict")
    func transactions() {
        let full = RequestDecoding.detail(
            StoreError(.io, "the commit failed: database or disk is full"), operations: [])
        #expect(full.code == .unavailable)
        #expect(full.message == "the commit failed: database or disk is full")
        let conflict = RequestDecoding.detail(StoreError(.conflict, "changed"), operations: [])
        #expect(conflict.code == .conflict)
        let bug = RequestDecoding.detail(StoreError(.internalError, "misuse"), operations: [])
        #expect(bug.code == .internal)
    }

    @Test("a read that failed on the disk is UNAVAILABLE with what failed and why, and no SQL")
    func reads() {
        let io = RequestDecoding.readFailure(
            StoreError(.io, "cannot read a snapshot of Point: disk I/O error"), "cannot read the query's rows")
        #expect(io.code == .unavailable)
        #expect(io.message == "cannot read the query's rows: cannot read a snapshot of Point: disk I/O error")
        let other = RequestDecoding.readFailure(
            StoreError(.schemaMismatch, #"the query does not fit Point: SELECT "id" FROM "Point""#),
            "cannot read the subscription's rows")
        #expect(other.code == .internal)
        #expect(other.message == "cannot read the subscription's rows: an internal error (the server logged it)")
    }
}
