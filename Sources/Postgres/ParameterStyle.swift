/// Rewrites the Store's `?1…?n` parameters to PostgreSQL's `$1…$n`, leaving string literals,
/// quoted identifiers and `--` comments alone (a `?` not followed by a digit is kept: it is an
/// operator in PostgreSQL). `$n` already in the text passes through, so either style works.
enum ParameterStyle {
    static func postgres(_ sql: String) -> String {
        var out: [UInt8] = []
        let bytes = Array(sql.utf8)
        out.reserveCapacity(bytes.count)
        var index = 0
        var quote: UInt8? = nil
        var inComment = false
        while index < bytes.count {
            let byte = bytes[index]
            if inComment {
                if byte == UInt8(ascii: "\n") { inComment = false }
            } else if let open = quote {
                if byte == open { quote = nil }  // a doubled quote closes and reopens: same result
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
            } else if byte == UInt8(ascii: "-"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "-") {
                inComment = true
            } else if byte == UInt8(ascii: "?"), index + 1 < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1])
            {
                out.append(UInt8(ascii: "$"))
                index += 1
                continue
            }
            out.append(byte)
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
