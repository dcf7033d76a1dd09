/// Lowercase hexadecimal text for bytes.
public enum Hex {
    /// Encodes `bytes` as lowercase hex, two digits per byte.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of an even-length hex string (either case), or nil when it is not one.
    public static func decode(_ text: String) -> [UInt8]? { decode(utf8: Array(text.utf8)) }

    /// The bytes that even-length hex digits (UTF-8, either case) spell, or nil.
    public static func decode(utf8: some Collection<UInt8>) -> [UInt8]? {
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        let utf8 = Array(utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let high = value(utf8[i]), let low = value(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
