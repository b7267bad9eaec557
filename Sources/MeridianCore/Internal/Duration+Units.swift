// MARK: - Durations in the units the flags and messages use

extension Duration {
    /// The duration in whole nanoseconds (clamped to `Int64`, about 292 years).
    package var nanoseconds: Int64 {
        let c = self.components
        let (seconds, overflow) = c.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return c.seconds < 0 ? .min : .max }
        let (total, overflowAdding) = seconds.addingReportingOverflow(c.attoseconds / 1_000_000_000)
        return overflowAdding ? (c.seconds < 0 ? .min : .max) : total
    }

    /// The duration as a message says it: `10 s` for whole seconds, else `500 ms`.
    package var spoken: String {
        let milliseconds = self.nanoseconds / 1_000_000
        return milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(milliseconds) ms"
    }
}
