/// An incremental UTF-8 validator (RFC 3629 §4, Unicode Table 3-7) for text messages that arrive
/// in pieces: fragments, or inflated chunks. It rejects at the first byte that cannot continue a
/// well-formed sequence — overlongs, surrogates (U+D800–U+DFFF), code points above U+10FFFF, stray
/// continuation bytes — so a bad message fails fast (RFC 6455 §8.1). A sequence may be split
/// across calls; `isComplete` tells whether the bytes so far end on a character boundary.
///
/// ```
/// U+0000..U+007F     00..7F
/// U+0080..U+07FF     C2..DF   80..BF
/// U+0800..U+0FFF     E0       A0..BF   80..BF
/// U+1000..U+CFFF     E1..EC   80..BF   80..BF
/// U+D000..U+D7FF     ED       80..9F   80..BF
/// U+E000..U+FFFF     EE..EF   80..BF   80..BF
/// U+10000..U+3FFFF   F0       90..BF   80..BF   80..BF
/// U+40000..U+FFFFF   F1..F3   80..BF   80..BF   80..BF
/// U+100000..U+10FFFF F4       80..8F   80..BF   80..BF
/// ```
public struct UTF8Validator: Sendable, Equatable {
    /// Continuation bytes still expected for the current sequence.
    private var needed: UInt8 = 0
    /// Bounds for the next continuation byte (narrower than 80..BF only right after a lead byte).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF
    /// Set at the first invalid byte; sticky.
    public private(set) var failed = false

    /// A validator at a character boundary.
    public init() {}

    /// Whether the bytes so far are valid and end on a character boundary (no sequence is open).
    public var isComplete: Bool { !failed && needed == 0 }

    /// Validates the next bytes; false as soon as one of them makes the input ill-formed (and
    /// for ever after).
    @discardableResult
    public mutating func validate(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if failed { return false }
        var i = 0
        let end = bytes.count
        while i < end {
            if needed == 0 {
                // ASCII fast path, eight bytes at a time.
                if let base = bytes.baseAddress {
                    let raw = UnsafeRawPointer(base)
                    while i &+ 8 <= end, raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                        i &+= 8
                    }
                }
                guard i < end else { break }
                let b = bytes[i]
                i &+= 1
                switch b {
                case 0x00...0x7F: continue
                case 0xC2...0xDF:
                    needed = 1
                    lower = 0x80
                    upper = 0xBF
                case 0xE0:
                    needed = 2
                    lower = 0xA0
                    upper = 0xBF
                case 0xE1...0xEC, 0xEE...0xEF:
                    needed = 2
                    lower = 0x80
                    upper = 0xBF
                case 0xED:
                    needed = 2
                    lower = 0x80
                    upper = 0x9F
                case 0xF0:
                    needed = 3
                    lower = 0x90
                    upper = 0xBF
                case 0xF1...0xF3:
                    needed = 3
                    lower = 0x80
                    upper = 0xBF
                case 0xF4:
                    needed = 3
                    lower = 0x80
                    upper = 0x8F
                default:
                    failed = true
                    return false  // 80..C1, F5..FF
                }
            } else {
                let b = bytes[i]
                i &+= 1
                guard b >= lower, b <= upper else {
                    failed = true
                    return false
                }
                needed &-= 1
                lower = 0x80
                upper = 0xBF
            }
        }
        return true
    }

    /// Validates the next bytes; see `validate(_:)` for buffers.
    @discardableResult
    public mutating func validate(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { validate($0) }
    }
}
