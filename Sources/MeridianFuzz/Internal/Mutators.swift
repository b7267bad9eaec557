// MARK: - Byte and text mutations

/// Byte-level mutations, the kind a corrupted or hostile peer produces: flips, random bytes, insertions,
/// deletions, truncations, duplicated ranges and splices from other inputs.
enum ByteMutator {
    /// `bytes` with one to four random mutations applied.
    static func mutate(_ bytes: [UInt8], random: inout FuzzRandom, dictionary: [[UInt8]] = []) -> [UInt8] {
        var out = bytes
        for _ in 0..<random.within(1...4) {
            Self.mutateOnce(&out, random: &random, dictionary: dictionary)
        }
        return out
    }

    private static func mutateOnce(_ out: inout [UInt8], random: inout FuzzRandom, dictionary: [[UInt8]]) {
        let at = random.below(out.count + 1)
        switch random.below(9) {
        case 0 where !out.isEmpty:  // flip one bit
            let i = random.below(out.count)
            out[i] ^= 1 << UInt8(random.below(8))
        case 1 where !out.isEmpty:  // set a byte to a random or boundary value
            out[random.below(out.count)] =
                random.oneIn(2) ? random.pick([0x00, 0x01, 0x7F, 0x80, 0xFF]) : random.bytes(1)[0]
        case 2:  // insert random bytes
            out.insert(contentsOf: random.bytes(random.length(upTo: 64)), at: at)
        case 3 where !out.isEmpty:  // delete a range
            let count = min(out.count - min(at, out.count - 1), random.within(1...8))
            let start = min(at, out.count - 1)
            out.removeSubrange(start..<(start + count))
        case 4:  // truncate
            out.removeSubrange(at...)
        case 5 where !out.isEmpty:  // duplicate a range
            let start = random.below(out.count)
            let end = min(out.count, start + random.within(1...32))
            out.insert(contentsOf: out[start..<end], at: random.below(out.count + 1))
        case 6 where !dictionary.isEmpty:  // splice in a dictionary token
            out.insert(contentsOf: random.pick(dictionary), at: at)
        case 7 where !out.isEmpty:  // overwrite with a varint that claims a huge length or value
            let huge = ProtoWire.varint(UInt64(random.pick([0x7FFF_FFFF, 0xFFFF_FFFF, 0x1_0000_0000, UInt64.max])))
            let start = random.below(out.count)
            out.replaceSubrange(start..<min(out.count, start + huge.count), with: huge)
        default:  // append
            out.append(contentsOf: random.bytes(random.within(1...16)))
        }
    }
}

/// Text mutations: character edits plus splices of tokens the format gives meaning to, so mutated text explores
/// the parser's grammar, not only its first error.
enum TextMutator {
    /// `text` with one to four mutations; `tokens` are the format's meaningful words and symbols.
    static func mutate(_ text: String, random: inout FuzzRandom, tokens: [String]) -> String {
        var characters = Array(text)
        for _ in 0..<random.within(1...4) {
            let at = random.below(characters.count + 1)
            switch random.below(8) {
            case 0 where !characters.isEmpty:  // delete a run of characters
                let start = min(at, characters.count - 1)
                characters.removeSubrange(start..<min(characters.count, start + random.within(1...6)))
            case 1:  // insert a token
                characters.insert(contentsOf: random.pick(tokens), at: at)
            case 2 where !characters.isEmpty:  // replace a character with a token
                let i = random.below(characters.count)
                characters.replaceSubrange(i...i, with: random.pick(tokens))
            case 3:  // truncate
                characters.removeSubrange(at...)
            case 4 where !characters.isEmpty:  // duplicate a run
                let start = random.below(characters.count)
                let end = min(characters.count, start + random.within(1...24))
                characters.insert(contentsOf: characters[start..<end], at: random.below(characters.count + 1))
            case 5:  // an awkward character: control, combining mark, surrogate-range escape, emoji, NUL
                characters.insert(random.pick(Self.awkward), at: at)
            case 6 where characters.count > 1:  // swap two characters
                let i = random.below(characters.count)
                let j = random.below(characters.count)
                characters.swapAt(i, j)
            default:  // random bytes decoded as UTF-8 (invalid sequences become U+FFFD)
                let bytes = random.bytes(random.within(1...8))
                characters.insert(contentsOf: String(decoding: bytes, as: UTF8.self), at: at)
            }
        }
        return String(characters)
    }

    /// Characters that break naive text handling.
    static let awkward: [Character] = [
        "\0", "\t", "\n", "\r\n", "\u{7F}", "\u{301}", "\u{200B}", "\u{FEFF}", "\u{FFFD}", "👍🏽", "é", "\u{1F1EB}",
        "\\", "\"", "'", "{", "}", "[", "]", ":", "#", "&", "*", "!", "|", ">", "%", "@", "`",
    ]
}
