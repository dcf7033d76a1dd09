/// Serialises responses (RFC 9112 §4, §6, §7.1) by appending to a caller-owned buffer, so a
/// response (or several pipelined ones) goes out in one write.
///
/// ```
/// HTTP/1.1 <code> <reason>CRLF
/// <the response's own fields>CRLF…
/// Date: <date>CRLF                       unless the response has one
/// Content-Length: <n>CRLF                unless 1xx/204/304, or the response has
///                                        Content-Length or Transfer-Encoding
/// Connection: close | keep-alive CRLF    see `write`; unless the response has one
/// CRLF
/// <body>                                 omitted for HEAD and 1xx/204/304
/// ```
///
/// Header fields are written as given, except that a field whose name is not a token is dropped
/// and any CTL other than HTAB in a value (CR, LF, NUL…) becomes SP — a handler can never split a
/// response. The reason phrase gets the same treatment.
public enum HTTPResponseWriter {
    /// Appends `response` to `buffer`. `Connection: close` is added when `!keepAlive`, and
    /// `Connection: keep-alive` when `keepAlive` and the request was HTTP/1.0 (where close is the
    /// default). For a HEAD request the body is left out while `Content-Length` still gives its
    /// length (RFC 9110 §9.3.2). 1xx, 204 and 304 responses never carry a body (RFC 9110 §6.4.1).
    /// A `bodyFile` is counted in `Content-Length` but not appended: the caller sends it after the head.
    /// `extraField`, when given, is written after the response's own fields as if it were the last of
    /// them (the server's `X-Request-Id`, without copying the response's field array to append it).
    public static func write(
        _ response: HTTPResponse, into buffer: inout [UInt8], date: String, keepAlive: Bool,
        requestVersion: HTTPVersion, isHeadRequest: Bool, extraField: HTTPHeaders.Element? = nil
    ) {
        let code = response.status.code
        let bodiless = code < 200 || code == 204 || code == 304
        // Measured first, then written with plain stores into the grown buffer (per-byte
        // appends, each with its capacity and uniqueness checks, were most of the writer's time).
        var present = PresentFields()
        var length = statusLineLength(response.status)
        var dropped: UInt64 = 0  // fields 0..<64 whose name is not a token; later ones are checked again
        let fields = response.headers.fields  // indexed, not iterated: no iterator or tuple copies
        for i in fields.indices {
            present.note(fields[i].name)
            if isToken(fields[i].name) {
                length += fields[i].name.utf8.count + fields[i].value.utf8.count + 4
            } else if i < 64 {
                dropped |= 1 << UInt64(i)
            }
        }
        let extraIsToken = extraField.map { isToken($0.name) } ?? false
        if let extraField {
            present.note(extraField.name)
            if extraIsToken { length += extraField.name.utf8.count + extraField.value.utf8.count + 4 }
        }
        if !present.date { length += 8 + date.utf8.count }
        let contentLength = !bodiless && !present.contentLength && !present.transferEncoding
        if contentLength { length += 18 + decimalDigits(response.bodyCount) }
        var connection: StaticString?
        if !present.connection {
            if !keepAlive {
                connection = "Connection: close\r\n"
            } else if requestVersion == .http1_0 {
                connection = "Connection: keep-alive\r\n"
            }
        }
        length += connection?.utf8CodeUnitCount ?? 0
        length += 2
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { head in
            var out = HeadCursor(head.baseAddress!)
            out.putStatusLine(response.status)
            for i in fields.indices {
                if i < 64 ? dropped & (1 << UInt64(i)) != 0 : !isToken(fields[i].name) { continue }
                out.putField(name: fields[i].name, value: fields[i].value)
            }
            if let extraField, extraIsToken { out.putField(name: extraField.name, value: extraField.value) }
            if !present.date { out.putField(name: "Date", value: date) }
            if contentLength {
                out.put("Content-Length: ")
                out.putDecimal(response.bodyCount)
                out.putCRLF()
            }
            if let connection { out.put(connection) }
            out.putCRLF()
            precondition(out.position == head.baseAddress! + length, "response head measured wrong")
            buffer.append(contentsOf: UnsafeBufferPointer(head))
        }
        if !isHeadRequest, !bodiless { buffer.append(contentsOf: response.body) }
    }

    /// Appends `HTTP/1.1 100 Continue\r\n\r\n` (RFC 9110 §15.2.1).
    public static func writeContinue(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "HTTP/1.1 100 Continue\r\n\r\n".utf8)
    }

    /// Appends the head of a chunked response: status line, `headers` (any `Content-Length` or
    /// `Transfer-Encoding` among them dropped), `Date` unless present, `Transfer-Encoding: chunked`
    /// and the `Connection` field as in `write`. Follow with `writeChunk`s and `writeLastChunk`.
    /// HTTP/1.0 clients do not understand chunked: answer them with `write` instead.
    public static func writeChunkedHead(
        status: HTTPStatus, headers: HTTPHeaders, into buffer: inout [UInt8], date: String, keepAlive: Bool,
        requestVersion: HTTPVersion
    ) {
        appendStatusLine(status, into: &buffer)
        var present = PresentFields()
        for field in headers {
            if isFramingField(field.name) { continue }
            present.note(field.name)
            appendField(name: field.name, value: field.value, into: &buffer)
        }
        if !present.date { appendField(name: "Date", value: date, into: &buffer) }
        buffer.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        if !present.connection { appendConnection(keepAlive: keepAlive, requestVersion: requestVersion, into: &buffer) }
        appendCRLF(into: &buffer)
    }

    /// Appends one chunk: `<hex size>\r\n<bytes>\r\n`. Empty `bytes` append nothing (an empty
    /// chunk would be the last-chunk).
    public static func writeChunk(_ bytes: [UInt8], into buffer: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        appendInteger(bytes.count, radix: 16, into: &buffer)
        appendCRLF(into: &buffer)
        buffer.append(contentsOf: bytes)
        appendCRLF(into: &buffer)
    }

    /// Appends the last-chunk and an empty trailer section: `0\r\n\r\n`.
    public static func writeLastChunk(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "0\r\n\r\n".utf8)
    }

    // MARK: Pieces

    /// Which of the fields the writer would add the response already carries.
    private struct PresentFields {
        var date = false
        var contentLength = false
        var transferEncoding = false
        var connection = false

        mutating func note(_ name: String) {
            switch name.utf8.count {
            case 4: if HTTPHeaders.namesEqual(name, "date") { date = true }
            case 10: if HTTPHeaders.namesEqual(name, "connection") { connection = true }
            case 14: if HTTPHeaders.namesEqual(name, "content-length") { contentLength = true }
            case 17: if HTTPHeaders.namesEqual(name, "transfer-encoding") { transferEncoding = true }
            default: break
            }
        }
    }

    private static func isFramingField(_ name: String) -> Bool {
        HTTPHeaders.namesEqual(name, "content-length") || HTTPHeaders.namesEqual(name, "transfer-encoding")
    }

    private static func appendStatusLine(_ status: HTTPStatus, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "HTTP/1.1 ".utf8)
        appendInteger(status.code, radix: 10, into: &buffer)
        buffer.append(ASCII.sp)
        appendSanitized(status.reasonPhrase, into: &buffer)
        appendCRLF(into: &buffer)
    }

    private static func appendConnection(keepAlive: Bool, requestVersion: HTTPVersion, into buffer: inout [UInt8]) {
        if !keepAlive {
            buffer.append(contentsOf: "Connection: close\r\n".utf8)
        } else if requestVersion == .http1_0 {
            buffer.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
    }

    private static func statusLineLength(_ status: HTTPStatus) -> Int {
        9 + decimalDigits(status.code) + 1 + status.reasonPhrase.utf8.count + 2
    }

    /// Digits of `max(value, 0)` in decimal.
    static func decimalDigits(_ value: Int) -> Int {
        var rest = max(value, 0)
        var digits = 1
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return digits
    }

    private static func isToken(_ name: String) -> Bool {
        name.utf8.withContiguousStorageIfAvailable { utf8 in !utf8.isEmpty && utf8.allSatisfy(ASCII.isTchar) }
            ?? (!name.isEmpty && name.utf8.allSatisfy(ASCII.isTchar))
    }

    /// Writes a measured response head with plain stores: the caller counted every byte first.
    private struct HeadCursor {
        var position: UnsafeMutablePointer<UInt8>

        init(_ start: UnsafeMutablePointer<UInt8>) { position = start }

        mutating func put(_ byte: UInt8) {
            position.initialize(to: byte)
            position += 1
        }

        mutating func put(_ text: StaticString) {
            position.update(from: text.utf8Start, count: text.utf8CodeUnitCount)
            position += text.utf8CodeUnitCount
        }

        mutating func putCRLF() {
            put(ASCII.cr)
            put(ASCII.lf)
        }

        /// The text's bytes as they are.
        mutating func put(_ text: String) {
            text.utf8.withContiguousBytes { utf8 in
                guard let base = utf8.baseAddress else { return }
                position.update(from: base, count: utf8.count)
                position += utf8.count
            }
        }

        /// The text's bytes, every CTL other than HTAB (and DEL) turned into SP.
        mutating func putSanitized(_ text: String) {
            let start = position
            put(text)
            let written = UnsafeMutableBufferPointer(start: start, count: position - start)
            if !ASCII.allFieldValueBytes(UnsafeBufferPointer(written)) {
                for i in written.indices where !ASCII.isFieldValueByte(written[i]) { written[i] = ASCII.sp }
            }
        }

        mutating func putField(name: String, value: String) {
            put(name)  // a token (`isToken`): nothing to replace
            put(ASCII.colon)
            put(ASCII.sp)
            putSanitized(value)
            putCRLF()
        }

        mutating func putStatusLine(_ status: HTTPStatus) {
            put("HTTP/1.1 ")
            putDecimal(status.code)
            put(ASCII.sp)
            putSanitized(status.reasonPhrase)
            putCRLF()
        }

        mutating func putDecimal(_ value: Int) {
            let digits = HTTPResponseWriter.decimalDigits(value)
            var rest = max(value, 0)
            for i in stride(from: digits - 1, through: 0, by: -1) {
                position[i] = UInt8(truncatingIfNeeded: 0x30 + rest % 10)
                rest /= 10
            }
            position += digits
        }
    }

    /// `name: value\r\n`; dropped when `name` is not a token.
    private static func appendField(name: String, value: String, into buffer: inout [UInt8]) {
        guard isToken(name) else { return }
        buffer.append(contentsOf: name.utf8)
        buffer.append(ASCII.colon)
        buffer.append(ASCII.sp)
        appendSanitized(value, into: &buffer)
        appendCRLF(into: &buffer)
    }

    /// Appends `text`, turning every CTL other than HTAB (and DEL) into SP.
    private static func appendSanitized(_ text: String, into buffer: inout [UInt8]) {
        let appended: Void? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            if ASCII.allFieldValueBytes(utf8) {
                buffer.append(contentsOf: utf8)
            } else {
                for b in utf8 { buffer.append(ASCII.isFieldValueByte(b) ? b : ASCII.sp) }
            }
        }
        if appended == nil {
            for b in text.utf8 { buffer.append(ASCII.isFieldValueByte(b) ? b : ASCII.sp) }
        }
    }

    private static func appendCRLF(into buffer: inout [UInt8]) {
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// ASCII digits of a non-negative integer (lower-case for hex), without building a `String`.
    private static func appendInteger(_ value: Int, radix: Int, into buffer: inout [UInt8]) {
        let first = buffer.count
        var rest = max(value, 0)
        repeat {
            let digit = UInt8(rest % radix)
            buffer.append(digit < 10 ? 0x30 + digit : 0x57 + digit)
            rest /= radix
        } while rest > 0
        buffer[first...].reverse()
    }
}
