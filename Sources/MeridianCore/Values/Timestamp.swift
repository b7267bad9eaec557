// MARK: - Timestamp

/// A point in time with microsecond precision, stored as integer microseconds since the Unix epoch (UTC).
///
/// Parsed from and printed as ISO-8601 (`2024-05-01T12:30:00Z`, `2024-05-01T12:30:00.250Z`,
/// `2024-05-01T14:30:00+02:00`, or a bare date `2024-05-01`, taken as midnight UTC).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public var microseconds: Int64

    /// Creates a timestamp from microseconds since the epoch.
    public init(microseconds: Int64) {
        self.microseconds = microseconds
    }

    /// Creates a timestamp from seconds since the epoch, rounded to the microsecond.
    public init(secondsSince1970 seconds: Double) {
        self.microseconds = Int64((seconds * 1_000_000).rounded())
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microseconds < rhs.microseconds
    }

    public var description: String { self.iso8601 }

    /// The timestamp in ISO-8601, UTC, with a fractional part only when there is one.
    public var iso8601: String {
        let (days, micros) = Self.floorDivide(self.microseconds, 86_400_000_000)
        let (y, m, d) = Self.civil(fromDays: days)
        let secondsOfDay = micros / 1_000_000
        let fraction = micros % 1_000_000
        let hh = secondsOfDay / 3600
        let mm = (secondsOfDay % 3600) / 60
        let ss = secondsOfDay % 60
        var out = Self.pad(y, 4) + "-" + Self.pad(m, 2) + "-" + Self.pad(d, 2)
        out += "T" + Self.pad(hh, 2) + ":" + Self.pad(mm, 2) + ":" + Self.pad(ss, 2)
        if fraction != 0 {
            var digits = Self.pad(fraction, 6)
            while digits.hasSuffix("0") { digits.removeLast() }
            out += "." + digits
        }
        return out + "Z"
    }

    /// Parses ISO-8601 text; `nil` when it is not a valid date-time.
    public init?(iso8601 text: String) {
        let chars = Array(text.utf8)
        var i = 0
        func number(_ count: Int) -> Int64? {
            guard i + count <= chars.count else { return nil }
            var n: Int64 = 0
            for k in 0..<count {
                let c = chars[i + k]
                guard c >= 48, c <= 57 else { return nil }
                n = n * 10 + Int64(c - 48)
            }
            i += count
            return n
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < chars.count, chars[i] == c else { return false }
            i += 1
            return true
        }
        var negativeYear = false
        if i < chars.count, chars[i] == UInt8(ascii: "-") {
            negativeYear = true
            i += 1
        }
        guard var year = number(4), expect(UInt8(ascii: "-")), let month = number(2),
            expect(UInt8(ascii: "-")), let day = number(2)
        else { return nil }
        if negativeYear { year = -year }
        guard (1...12).contains(month), day >= 1, day <= Self.daysInMonth(year, month) else { return nil }
        var seconds: Int64 = 0
        var micros: Int64 = 0
        var offset: Int64 = 0
        if i < chars.count {
            guard chars[i] == UInt8(ascii: "T") || chars[i] == UInt8(ascii: " ") else { return nil }
            i += 1
            guard let hh = number(2), expect(UInt8(ascii: ":")), let mm = number(2) else { return nil }
            var ss: Int64 = 0
            if expect(UInt8(ascii: ":")) {
                guard let s = number(2) else { return nil }
                ss = s
            }
            guard hh < 24, mm < 60, ss < 60 else { return nil }
            seconds = hh * 3600 + mm * 60 + ss
            if expect(UInt8(ascii: ".")) {
                var digits = 0
                while i < chars.count, chars[i] >= 48, chars[i] <= 57 {
                    if digits < 6 { micros = micros * 10 + Int64(chars[i] - 48) }
                    digits += 1
                    i += 1
                }
                guard digits > 0 else { return nil }
                for _ in digits..<max(digits, 6) { micros *= 10 }
            }
            if expect(UInt8(ascii: "Z")) || expect(UInt8(ascii: "z")) {
                offset = 0
            } else if i < chars.count, chars[i] == UInt8(ascii: "+") || chars[i] == UInt8(ascii: "-") {
                let sign: Int64 = chars[i] == UInt8(ascii: "+") ? 1 : -1
                i += 1
                guard let oh = number(2) else { return nil }
                _ = expect(UInt8(ascii: ":"))
                guard let om = number(2), oh < 24, om < 60 else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            } else {
                return nil
            }
        }
        guard i == chars.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let (total, overflow) = (days * 86_400 + seconds - offset).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return nil }
        self.microseconds = total + micros
    }

    // MARK: Calendar arithmetic (proleptic Gregorian; Howard Hinnant's algorithms)

    static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b
        var r = a % b
        if r < 0 {
            q -= 1
            r += b
        }
        return (q, r)
    }

    static func days(fromCivil y: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y - 1 : y
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z: Int64) -> (Int64, Int64, Int64) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func pad(_ n: Int64, _ width: Int) -> String {
        let s = String(abs(n))
        let padded = String(repeating: "0", count: max(0, width - s.count)) + s
        return n < 0 ? "-" + padded : padded
    }
}
