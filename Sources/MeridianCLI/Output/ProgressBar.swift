// MARK: - Progress bar

/// A one-line progress bar on standard error, drawn only when standard error is a terminal (never in pipes, logs or
/// tests).
///
/// ```text
/// importing Point [##############----------------]  1500/3000
/// ```
struct ProgressBar: Sendable {
    let label: String
    let total: Int
    let enabled: Bool
    var width = 30

    init(label: String, total: Int, enabled: Bool = Terminal.isTerminal(2)) {
        self.label = label
        self.total = total
        self.enabled = enabled
    }

    /// The bar's text for `done` of `total`.
    func line(done: Int) -> String {
        let fraction = self.total == 0 ? 1 : Double(min(done, self.total)) / Double(self.total)
        let filled = Int((fraction * Double(self.width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: self.width - filled)
        return "\(self.label) [\(bar)] \(done)/\(self.total)"
    }

    /// Redraws the bar in place.
    func update(done: Int) {
        guard self.enabled else { return }
        Terminal.writeError("\r" + self.line(done: done) + "\u{1B}[K")
    }

    /// Erases the bar.
    func finish() {
        guard self.enabled else { return }
        Terminal.writeError("\r\u{1B}[K")
    }
}
