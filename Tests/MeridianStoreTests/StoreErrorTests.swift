import MeridianStore
import Testing

@Suite struct StoreErrorTests {
    @Test("description names the code, the message and the cause")
    func description() {
        struct Cause: Error, CustomStringConvertible { var description: String { "disk full" } }
        let error = StoreError(.io, "cannot commit", cause: Cause())
        #expect(error.description == "io: \"cannot commit\" (cause: disk full)")
    }
}
