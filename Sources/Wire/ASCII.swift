/// Byte values and character classes of the HTTP grammar (RFC 9110 §5.6, RFC 9112 §2).
enum ASCII {
    static let htab: UInt8 = 0x09
    static let lf: UInt8 = 0x0A
    static let cr: UInt8 = 0x0D
    static let sp: UInt8 = 0x20
    static let dquote: UInt8 = 0x22
    static let asterisk: UInt8 = 0x2A
    static let comma: UInt8 = 0x2C
    static let slash: UInt8 = 0x2F
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let equals: UInt8 = 0x3D
    static let backslash: UInt8 = 0x5C
    static let del: UInt8 = 0x7F

    /// `tchar` (RFC 9110 §5.6.2): the characters of methods, field names and codings, as two
    /// 64-bit masks over 0–63 and 64–127.
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        if b < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) &>> UInt64(b) & 1 == 1 }
        if b < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) &>> UInt64(b &- 64) & 1 == 1 }
        return false
    }

    /// `field-vchar / SP / HTAB` (RFC 9110 §5.5, obs-text included): anything but CTLs other
    /// than HTAB, and DEL.
    @inline(__always)
    static func isFieldValueByte(_ b: UInt8) -> Bool { b >= sp ? b != del : b == htab }

    /// Whether every byte is a field-value byte (`isFieldValueByte`). Checks eight bytes at a time:
    /// field values are most of a request's header bytes.
    static func allFieldValueBytes(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let end = bytes.count
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i &+ 8 <= end {
                let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                // Some byte < 0x20 (only ASCII bytes can be flagged), or some byte == 0x7F: let
                // the exact per-byte check below decide (HTAB is allowed).
                let low = (word &- 0x2020_2020_2020_2020) & ~word & 0x8080_8080_8080_8080
                let delXor = word ^ 0x7F7F_7F7F_7F7F_7F7F
                let del = (delXor &- 0x0101_0101_0101_0101) & ~delXor & 0x8080_8080_8080_8080
                if low | del != 0 { break }
                i &+= 8
            }
        }
        while i < end {
            if !isFieldValueByte(bytes[i]) { return false }
            i &+= 1
        }
        return true
    }

    /// `OWS` member: SP or HTAB.
    @inline(__always)
    static func isWhitespace(_ b: UInt8) -> Bool { b == sp || b == htab }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    @inline(__always)
    static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) &- 0x61 < 26 }

    /// The value of a hex digit, or nil.
    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt8? {
        if b &- 0x30 < 10 { return b &- 0x30 }
        let lower = b | 0x20
        if lower &- 0x61 < 6 { return lower &- 0x61 &+ 10 }
        return nil
    }

    /// Whether `bytes` equal `lowercase` (an ASCII literal in lower case), ignoring ASCII case.
    @inline(__always)
    static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for i in 0..<bytes.count {
            let b = bytes[i]
            let folded = b &- 0x41 < 26 ? b | 0x20 : b
            if folded != expected[i] { return false }
        }
        return true
    }

    /// `bytes` without leading and trailing OWS.
    static func trimmingWhitespace(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var lower = 0
        var upper = bytes.count
        while lower < upper, isWhitespace(bytes[lower]) { lower += 1 }
        while upper > lower, isWhitespace(bytes[upper - 1]) { upper -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[lower..<upper])
    }

    /// Calls `body` with each element of a comma-separated list (RFC 9110 §5.6.1), OWS-trimmed.
    /// Empty elements are passed too (an empty value yields one empty element); callers decide.
    static func forEachListElement(
        _ value: UnsafeBufferPointer<UInt8>,
        _ body: (UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> Void
    ) throws(HTTPParseError) {
        var elementStart = 0
        while true {
            var end = elementStart
            while end < value.count, value[end] != comma { end += 1 }
            try body(trimmingWhitespace(UnsafeBufferPointer(rebasing: value[elementStart..<end])))
            if end == value.count { return }
            elementStart = end + 1
        }
    }

    /// The index of the first LF in `bytes` at or after `from`, or nil. Compares eight bytes at a
    /// time on little-endian machines: this scan is the parser's hot loop.
    static func firstLF(in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        var i = from
        let end = bytes.count
        #if _endian(little)
            if let base = bytes.baseAddress {
                let raw = UnsafeRawPointer(base)
                while i &+ 8 <= end {
                    // Zero-byte detection on word ^ 0x0A…: the lowest flagged byte is always a true
                    // match (false positives only appear above a real one).
                    let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ 0x0A0A_0A0A_0A0A_0A0A
                    let found = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
                    if found != 0 { return i + (found.trailingZeroBitCount >> 3) }
                    i &+= 8
                }
            }
        #endif
        while i < end {
            if bytes[i] == lf { return i }
            i &+= 1
        }
        return nil
    }
}
