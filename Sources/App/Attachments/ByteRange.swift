import Wire

/// One `Range: bytes=…` request (RFC 9110 §14.1.2) resolved against a representation's length.
/// Only a single range is honoured; a multi-range or malformed header is ignored (the whole file is
/// sent with 200, which §14.2 allows). A syntactically valid range that starts past the end is
/// unsatisfiable (416 with `Content-Range: bytes */length`).
struct ByteRange: Equatable, Sendable {
    /// First byte, inclusive.
    var first: Int64
    /// Last byte, inclusive.
    var last: Int64

    var count: Int64 { last - first + 1 }

    /// What a `Range` header asks for, for a representation of `length` bytes.
    enum Outcome: Equatable, Sendable {
        /// No usable header: send the whole representation.
        case whole
        case partial(ByteRange)
        case unsatisfiable
    }

    static func resolve(_ header: String?, length: Int64) -> Outcome {
        guard let header, header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingASCIIWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let start = spec[..<dash]
        let end = spec[spec.index(after: dash)...]
        func number(_ digits: Substring) -> Int64? {
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
            return Int64(digits)
        }
        if start.isEmpty {
            // bytes=-N: the last N bytes.
            guard let suffix = number(end) else { return .whole }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(ByteRange(first: max(0, length - suffix), last: length - 1))
        }
        guard let first = number(start) else { return .whole }
        let last: Int64
        if end.isEmpty {
            last = length - 1
        } else {
            guard let value = number(end), value >= first else { return .whole }
            last = min(value, length - 1)
        }
        guard first < length else { return .unsatisfiable }
        return .partial(ByteRange(first: first, last: last))
    }
}
