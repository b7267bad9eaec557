// Stand-in for `Schema.fingerprint`, which is being written in MeridianCore; delete this file at merge.

internal import MeridianCore

extension Schema {
    /// A stable hash (FNV-1a, 64 bits, hex) of a canonical text of the schema; stand-in until MeridianCore's lands.
    var fingerprint: String {
        var text = "meridian-schema\n"
        for entity in self.entities {
            text += "entity \(entity.name) id=\(entity.idPolicy.rawValue)\n"
            for attribute in entity.attributes {
                let defaultText = attribute.defaultValue.map { " default=\($0)" } ?? ""
                text +=
                    "  \(attribute.name) \(attribute.type.rawValue) optional=\(attribute.isOptional)\(defaultText)\n"
            }
            for index in entity.indexes {
                text += "  index \(index.name) (\(index.attributes.joined(separator: ","))) unique=\(index.isUnique)\n"
            }
            for derived in entity.derived {
                text += "  derived \(derived.name) \(derived.dependencies.joined(separator: ","))\n"
            }
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
