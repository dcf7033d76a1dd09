/// Base64 with the standard alphabet and `=` padding (RFC 4648 §4), as HTTP and RFC 6455 use it.
public enum Base64 {
    /// Encodes `bytes` as padded standard base64.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64Codec.standard.encode(bytes)
    }

    /// Decodes padded standard base64; nil for a length that is not a multiple of 4, misplaced or
    /// missing padding, characters outside the alphabet (whitespace included) or non-zero pad bits.
    public static func decode(_ text: String) -> [UInt8]? {
        Base64Codec.standard.decode(text)
    }
}

/// Base64 with the URL- and filename-safe alphabet and no padding (RFC 4648 §5), for tokens and
/// password-hash fields.
public enum Base64URL {
    /// Encodes `bytes` as unpadded base64url.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64Codec.url.encode(bytes)
    }

    /// Decodes unpadded base64url; nil for `=` padding, characters outside the alphabet, an
    /// impossible length (4k+1) or non-zero pad bits, so every byte string has exactly one encoding.
    public static func decode(_ text: String) -> [UInt8]? {
        Base64Codec.url.decode(text)
    }
}

/// One RFC 4648 alphabet plus its padding rule.
struct Base64Codec: Sendable {
    /// The 64 alphabet characters in value order.
    let alphabet: [UInt8]
    /// Value of each byte, or 0xFF for bytes outside the alphabet.
    let values: [UInt8]
    /// Whether encoded text is padded with `=` to a multiple of 4 characters.
    let padded: Bool

    /// RFC 4648 §4.
    static let standard = Base64Codec(
        alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", padded: true)
    /// RFC 4648 §5, unpadded.
    static let url = Base64Codec(
        alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", padded: false)

    /// Builds the codec for a 64-character ASCII alphabet.
    init(alphabet: String, padded: Bool) {
        self.alphabet = Array(alphabet.utf8)
        precondition(self.alphabet.count == 64)
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in self.alphabet.enumerated() { values[Int(character)] = UInt8(value) }
        self.values = values
        self.padded = padded
    }

    /// Encodes `bytes` in this alphabet.
    func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            out.append(alphabet[Int(group >> 18 & 0x3F)])
            out.append(alphabet[Int(group >> 12 & 0x3F)])
            out.append(alphabet[Int(group >> 6 & 0x3F)])
            out.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let group = UInt32(input[index]) << 16
            out.append(alphabet[Int(group >> 18 & 0x3F)])
            out.append(alphabet[Int(group >> 12 & 0x3F)])
            if padded {
                out.append(UInt8(ascii: "="))
                out.append(UInt8(ascii: "="))
            }
        case 2:
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            out.append(alphabet[Int(group >> 18 & 0x3F)])
            out.append(alphabet[Int(group >> 12 & 0x3F)])
            out.append(alphabet[Int(group >> 6 & 0x3F)])
            if padded { out.append(UInt8(ascii: "=")) }
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `text` strictly (see `Base64.decode` / `Base64URL.decode`).
    func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        if padded {
            guard characters.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, characters.last == UInt8(ascii: "=") {
                characters.removeLast()
                padding += 1
            }
            // Padding must make the unpadded length exactly complete: 4k+2 needs "==", 4k+3 needs "=".
            guard (characters.count + padding) % 4 == 0, padding == (4 - characters.count % 4) % 4 else {
                return nil
            }
        }
        let remainder = characters.count % 4
        guard remainder != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(characters.count / 4 * 3 + 2)
        var group: UInt32 = 0
        var pending = 0
        for character in characters {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            pending += 1
            if pending == 4 {
                out.append(UInt8(truncatingIfNeeded: group >> 16))
                out.append(UInt8(truncatingIfNeeded: group >> 8))
                out.append(UInt8(truncatingIfNeeded: group))
                group = 0
                pending = 0
            }
        }
        switch pending {
        case 2:
            guard group & 0x0F == 0 else { return nil }
            out.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            guard group & 0x03 == 0 else { return nil }
            out.append(UInt8(truncatingIfNeeded: group >> 10))
            out.append(UInt8(truncatingIfNeeded: group >> 2))
        default:
            break
        }
        return out
    }
}
