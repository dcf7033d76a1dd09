/// The one JSON string escaper (RFC 8259 §7) of the hand-written JSON in this server: error
/// envelopes, log lines, realtime messages, admin output, stored documents (`DocumentWriter`).
/// Quote and backslash are escaped, `\b`, `\t`, `\n`, `\f`, `\r` use their short forms, other C0
/// controls become `\u00XX` (lower-case hex) and so does DEL unless `escapingDelete` is false (the
/// documents, which match Foundation's `JSONEncoder` byte for byte); every other UTF-8 byte is copied
/// as is (valid UTF-8 in, valid UTF-8 out).
public enum JSONString {
    /// Appends `utf8` as a quoted JSON string literal to `bytes`.
    public static func append(_ utf8: some Sequence<UInt8>, to bytes: inout [UInt8], escapingDelete: Bool = true) {
        bytes.append(0x22)
        for byte in utf8 {
            switch byte {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x08: bytes.append(contentsOf: [0x5C, 0x62])
            case 0x09: bytes.append(contentsOf: [0x5C, 0x74])
            case 0x0A: bytes.append(contentsOf: [0x5C, 0x6E])
            case 0x0C: bytes.append(contentsOf: [0x5C, 0x66])
            case 0x0D: bytes.append(contentsOf: [0x5C, 0x72])
            case 0x00..<0x20:
                appendUnicodeEscape(byte, to: &bytes)
            case 0x7F where escapingDelete:
                appendUnicodeEscape(byte, to: &bytes)
            default: bytes.append(byte)
            }
        }
        bytes.append(0x22)
    }

    /// `\u00XX` for a control byte.
    private static func appendUnicodeEscape(_ byte: UInt8, to bytes: inout [UInt8]) {
        func hex(_ n: UInt8) -> UInt8 { n < 10 ? 0x30 + n : 0x57 + n }
        bytes.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex(byte >> 4), hex(byte & 0x0F)])
    }

    /// `text` as a quoted JSON string literal.
    public static func quote(_ text: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        append(text.utf8, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
