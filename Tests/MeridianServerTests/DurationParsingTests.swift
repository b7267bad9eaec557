// The server flags' durations (`--hello-timeout`) and ages (`--log-retention`): one parser.

import MeridianServer
import Testing

@Suite struct DurationParsingTests {
    @Test("a whole number with ms, s, m, h or d; anything else, or too large, is nil")
    func durations() {
        #expect(ServerConfiguration.duration(parsing: "500ms") == .milliseconds(500))
        #expect(ServerConfiguration.duration(parsing: "45s") == .seconds(45))
        #expect(ServerConfiguration.duration(parsing: "30m") == .seconds(1_800))
        #expect(ServerConfiguration.duration(parsing: "12h") == .seconds(43_200))
        #expect(ServerConfiguration.duration(parsing: "7d") == .seconds(604_800))
        for bad in ["", "7", "7w", "s", "-1s", "1.5s", "999999999999999999d"] {
            #expect(ServerConfiguration.duration(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test("log retention: a count, an age of whole seconds, both, or none")
    func retention() {
        #expect(LogRetention(parsing: "1000000,7d") == LogRetention(changes: 1_000_000, age: .seconds(604_800)))
        #expect(LogRetention(parsing: "12h")?.age == .seconds(43_200))
        #expect(LogRetention(parsing: "none") == LogRetention(changes: nil, age: nil))
        for bad in ["7w", "500ms", "1d,2d", "1,2", "999999999999999999d"] {
            #expect(LogRetention(parsing: bad) == nil, "\(bad)")
        }
    }
}
