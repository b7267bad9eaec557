internal import Yams

// MARK: - Default values

extension SchemaDecoder {
    /// Parses an attribute's `default` by the attribute's type.
    ///
    /// - int: a plain decimal integer (`0`, `-12`) within 64 bits.
    /// - double: an integer or decimal number, `.inf` or `-.inf`; NaN is rejected.
    /// - bool: `true` or `false`.
    /// - string: a YAML string; a value that YAML reads as something else (`123`, `true`) must be quoted.
    /// - timestamp: an ISO-8601 date or date-time (`2024-05-01`, `2024-05-01T12:30:00Z`, with an offset or
    ///   fraction).
    /// - bytes: `hex:00ff` or `base64:AP8=` (a string with one of those prefixes), or a YAML `!!binary` scalar.
    /// - `null` (`~`, or nothing): allowed for optional attributes only, and the same as no default.
    ///
    /// - Returns: the default, or `nil` when it is `null`.
    func defaultValue(
        _ node: Yams.Node,
        type: AttributeType,
        isOptional: Bool,
        path: String
    ) throws(SchemaError) -> Value? {
        let kind = node.kind
        if kind == .null {
            guard isOptional else {
                throw self.error(
                    .invalidDefault,
                    "\(path): a required attribute cannot default to null (make it optional with '\(type)?')",
                    at: node
                )
            }
            return nil
        }
        guard let text = node.scalarText else {
            throw self.error(
                .invalidDefault,
                "\(path): default must be a single \(type) value, not \(kind.phrase)",
                at: node
            )
        }
        func fail(_ hint: String = "") -> SchemaError {
            self.error(.invalidDefault, "\(path): default '\(text)' is not \(Self.article(type))\(hint)", at: node)
        }

        switch type {
        case .int:
            guard kind == .int else {
                throw fail(kind == .float ? " (it has a fraction; make the attribute a double)" : "")
            }
            guard let value = Int64(text) else {
                let digits = text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "-" || $0 == "+") }
                throw fail(digits ? " (out of the 64-bit range)" : " (write integers in plain decimal)")
            }
            return .int(value)

        case .double:
            guard kind == .int || kind == .float else { throw fail() }
            let lower = text.lowercased()
            let value: Double?
            switch lower {
            case ".inf", "+.inf": value = .infinity
            case "-.inf": value = -.infinity
            case ".nan":
                throw self.error(.invalidDefault, "\(path): default is NaN, which no attribute accepts", at: node)
            default: value = Double(text)
            }
            guard let value, !value.isNaN else { throw fail(" (write numbers in plain decimal, e.g. 1.5 or 2e-3)") }
            return .double(value)

        case .bool:
            guard kind == .bool, ["true", "false"].contains(text.lowercased()) else {
                throw fail(" (write true or false)")
            }
            return .bool(text.lowercased() == "true")

        case .string:
            guard kind == .string else { throw fail(" (quote it: \"\(text)\")") }
            return .string(text)

        case .timestamp:
            guard kind == .string || kind == .timestamp, let value = Timestamp(iso8601: text) else {
                throw fail(" (write ISO-8601, e.g. 2024-05-01T12:30:00Z)")
            }
            return .timestamp(value)

        case .bytes:
            if kind == .binary {
                guard let bytes = ByteText.base64(Substring(text)) else { throw fail(" (invalid base64)") }
                return .bytes(bytes)
            }
            guard kind == .string else { throw fail(" (write 'hex:00ff' or 'base64:AP8=')") }
            if text.hasPrefix("hex:") {
                guard let bytes = ByteText.hex(text.dropFirst(4)) else {
                    throw fail(" (after 'hex:' write an even number of hex digits)")
                }
                return .bytes(bytes)
            }
            if text.hasPrefix("base64:") {
                guard let bytes = ByteText.base64(text.dropFirst(7)) else { throw fail(" (invalid base64)") }
                return .bytes(bytes)
            }
            throw fail(" (write 'hex:00ff' or 'base64:AP8=')")
        }
    }

    /// "an int", "a string", "valid bytes", …
    static func article(_ type: AttributeType) -> String {
        switch type {
        case .int: "an int"
        case .bytes: "valid bytes"
        default: "a \(type)"
        }
    }
}
