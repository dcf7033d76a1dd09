/// One step of output from `HTTPRequestParser.next()`.
public enum HTTPParserEvent: Sendable {
    /// The request line and header block are complete. The shell answers `100 Continue` here when
    /// `head.expectsContinue` (which the parser sets only when a body follows).
    case head(HTTPRequestHead)
    /// The whole request, body de-chunked; always follows its `.head`. Never for a streamed body.
    case request(HTTPRequest)
    /// The next bytes of a streamed body (`HTTPRequestHead.streamsBody`), de-chunked, in order, never
    /// empty: whatever was buffered of the body when `next()` was called. The parser keeps none of them.
    case bodyChunk([UInt8])
    /// A streamed body is complete: the request is whole (its head was `.head`, its body the `.bodyChunk`s).
    case bodyEnd
}

/// A sans-I/O HTTP/1.1 request parser (RFC 9112): bytes in through `append`, events out of `next()`.
///
/// ```
/// request-line   = method SP request-target SP HTTP-version CRLF      (§3)
/// field-line     = field-name ":" OWS field-value OWS CRLF            (§5)
/// message        = request-line *( field-line ) CRLF [ message-body ] (§2.1)
/// chunked-body   = *chunk last-chunk trailer-section CRLF             (§7.1)
/// chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
/// ```
///
/// Strictness, chosen to leave no room for request smuggling:
/// - Lines end in CRLF only: a bare LF, or a CR not followed by LF, is 400 (§2.2 allows either).
/// - Up to `HTTPLimits.maxLeadingEmptyLines` CRLFs before a request line are skipped (§2.2).
/// - obs-fold, whitespace before the colon and leading whitespace in the header block are 400.
/// - Field values may hold SP, HTAB, VCHAR and obs-text; any other CTL (NUL, CR, LF, DEL…) is 400.
///   obs-text bytes that are not UTF-8 reach the `String` value as U+FFFD.
/// - `Content-Length` must be 1*DIGIT; repeats and lists are accepted only when every value is the
///   same number. A value above `maxBodyBytes` is 413 however many digits it has (no overflow:
///   the parse saturates).
/// - `Transfer-Encoding` must be exactly `chunked` (any case); any other coding is 501; together
///   with `Content-Length`, or in HTTP/1.0, it is 400.
/// - `Expect: 100-continue` sets `expectsContinue` on 1.1 requests with a body; any other
///   expectation is 417. HTTP/1.0 expectations are ignored (RFC 9110 §10.1.1).
/// - HTTP/1.1 requires exactly one `Host` field; any request with two is 400.
/// - Targets: origin-form (`/…`), absolute-form (`scheme:…`), and `*` for OPTIONS only.
///
/// Bodies: buffered whole and delivered in `.request`, except an upload's (`HTTPLimits.isUpload`), which
/// is streamed — `.head` with `streamsBody`, then `.bodyChunk`s as bytes arrive, then `.bodyEnd` — so the
/// shell can write it to a file instead of holding it (docs/attachments.md#storage). Both are bounded
/// alike: the declared length at head time, a chunked body as soon as a chunk size pushes it over.
///
/// Limits are checked as soon as the length they bound is known (see `HTTPLimits`). After a
/// throw the parser is dead: every later `next()` throws the same error and `append` is ignored.
public struct HTTPRequestParser: Sendable {
    /// Where the parser stands, for the shell's deadlines.
    public enum State: Sendable {
        /// Between requests, no bytes of the next one buffered (keep-alive idle).
        case idle
        /// Inside a request line or header block.
        case head
        /// After `.head`, until `.request` or `.bodyEnd` (reading the body, if any).
        case body
    }

    /// The limits this parser enforces.
    public let limits: HTTPLimits
    /// Where the parser stands; see `State`.
    public private(set) var state: State = .idle
    /// Bytes received and not yet consumed by a returned event.
    public var bufferedByteCount: Int { buffer.count - start }

    private enum Phase: Sendable {
        case requestLine
        case headerLines
        case fixedBody(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailerLines
        case failed(HTTPParseError)
    }

    /// What the header block said about framing and connection handling.
    fileprivate struct HeadFacts: Sendable {
        var hostCount = 0
        var contentLength: Int?
        var contentLengthConflict = false
        var hasTransferEncoding = false
        var chunkedCount = 0
        var unknownCoding = false
        var connectionClose = false
        var connectionKeepAlive = false
        var expectContinue = false
        var expectOther = false
    }

    /// The request being assembled.
    private struct Pending: Sendable {
        var head = HTTPRequestHead(method: .get, target: "")
        var facts = HeadFacts()
        var body: [UInt8] = []
        /// Body bytes so far (buffered or streamed): what the body limit is checked against.
        var bodyCount = 0
        /// `HTTPLimits.maxBodyBytes(for:)` of this request's head, and the 413 to answer past it.
        var maxBodyBytes = 0
        var bodyTooLarge = HTTPRequestParser.bodyTooLarge
        /// Bytes and field lines so far of the header block, then of the trailer section.
        var sectionBytes = 0
        var sectionFields = 0
        var extensionBytes = 0
    }

    /// A chunk-size line holds at most this many hex digits (16 fit a UInt64: no overflow).
    static let maxChunkSizeDigits = 16

    private var buffer: [UInt8] = []
    /// Index of the first unconsumed byte. Bytes before it are dropped lazily by `compact()`.
    private var start = 0
    /// Bytes after `start` already known to hold no LF, so a line is never rescanned.
    private var scanned = 0
    private var phase = Phase.requestLine
    private var emptyLines = 0
    private var pending = Pending()

    /// A parser with the given limits.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    // MARK: Input

    /// Buffers received bytes; call `next()` until it returns nil afterwards.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if case .failed = phase { return }
        compact()
        bytes.withMemoryRebound(to: UInt8.self) { buffer.append(contentsOf: $0) }
        if state == .idle { state = .head }
    }

    /// Buffers received bytes; call `next()` until it returns nil afterwards.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Removes and returns the bytes buffered after the last complete request (protocol-upgrade
    /// handoff, e.g. WebSocket). Call it after `.request`; the parser is reset to `.idle`, and any
    /// partly parsed request is dropped.
    public mutating func takeBufferedBytes() -> [UInt8] {
        let rest = Array(buffer[start...])
        buffer = []
        start = 0
        scanned = 0
        if case .failed = phase { return rest }
        phase = .requestLine
        pending = Pending()
        emptyLines = 0
        state = .idle
        return rest
    }

    /// Largest buffer capacity kept once everything buffered is consumed: an idle connection does
    /// not keep a large body's worth of memory.
    static let retainedCapacity = 64 * 1024

    /// Drops consumed bytes when that is cheap (see `dropConsumedBytes`).
    private mutating func compact() { dropConsumedBytes(&buffer, start: &start, retainedCapacity: Self.retainedCapacity) }

    // MARK: Output

    /// The next event, or nil when more bytes are needed. Throws on malformed or oversized input;
    /// after a throw the parser is dead (the shell answers `error.status` with `Connection: close`
    /// and closes).
    public mutating func next() throws(HTTPParseError) -> HTTPParserEvent? {
        do throws(HTTPParseError) {
            let event = try step()
            switch phase {
            case .requestLine: state = bufferedByteCount == 0 ? .idle : .head
            case .headerLines: state = .head
            case .fixedBody, .chunkSizeLine, .chunkData, .chunkDataEnd, .trailerLines: state = .body
            case .failed: break
            }
            return event
        } catch {
            phase = .failed(error)
            buffer = []
            start = 0
            scanned = 0
            pending = Pending()
            throw error
        }
    }

    private mutating func step() throws(HTTPParseError) -> HTTPParserEvent? {
        while true {
            switch phase {
            case .failed(let error):
                throw error

            case .requestLine:
                guard let line = try nextLine(maxContentBytes: limits.maxRequestLineBytes, tooLong: Self.uriTooLong)
                else { return nil }
                if line.isEmpty {
                    emptyLines += 1
                    if emptyLines > limits.maxLeadingEmptyLines {
                        throw .badRequest("too many empty lines before the request line")
                    }
                    continue
                }
                emptyLines = 0
                try parseRequestLine(line)
                phase = .headerLines

            case .headerLines:
                guard let line = try nextFieldLine() else { return nil }
                if line.isEmpty { return try finishHead() }
                try parseHeaderField(line)

            case .fixedBody(let remaining):
                if remaining > 0, pending.head.streamsBody {
                    guard let chunk = takeChunk(upTo: remaining) else { return nil }
                    phase = .fixedBody(remaining: remaining - chunk.count)
                    return .bodyChunk(chunk)
                }
                let taken = takeBody(upTo: remaining)
                if taken < remaining {
                    phase = .fixedBody(remaining: remaining - taken)
                    return nil
                }
                return completeRequest()

            case .chunkSizeLine:
                guard try parseChunkSizeLine() else { return nil }

            case .chunkData(let remaining):
                if pending.head.streamsBody {
                    guard let chunk = takeChunk(upTo: remaining) else { return nil }
                    phase = chunk.count < remaining ? .chunkData(remaining: remaining - chunk.count) : .chunkDataEnd
                    return .bodyChunk(chunk)
                }
                let taken = takeBody(upTo: remaining)
                if taken < remaining {
                    phase = .chunkData(remaining: remaining - taken)
                    return nil
                }
                phase = .chunkDataEnd

            case .chunkDataEnd:
                // RFC 9112 §7.1: chunk-data is followed by exactly CRLF.
                let available = bufferedByteCount
                if available >= 1, buffer[start] != ASCII.cr { throw Self.missingChunkCRLF }
                if available >= 2, buffer[start + 1] != ASCII.lf { throw Self.missingChunkCRLF }
                if available < 2 { return nil }
                start += 2
                phase = .chunkSizeLine

            case .trailerLines:
                guard let line = try nextFieldLine() else { return nil }
                if line.isEmpty { return completeRequest() }
                try parseTrailerField(line)
            }
        }
    }

    // MARK: Lines

    /// Consumes the next CRLF-terminated line and returns its content (without CRLF) as indexes
    /// into `buffer`, valid until the next `append`; nil when no LF is buffered yet. Throws
    /// `tooLong` as soon as the content is known to exceed `maxContentBytes` — before its LF
    /// arrives if need be — and 400 for a bare LF. The length is judged before the syntax so that
    /// every split of an input gets the same error.
    private mutating func nextLine(maxContentBytes: Int, tooLong: HTTPParseError) throws(HTTPParseError) -> Range<Int>? {
        let lineStart = start
        let from = start + scanned
        let found = buffer.withUnsafeBufferPointer { ASCII.firstLF(in: $0, from: from) }
        guard let lf = found else {
            scanned = buffer.count - lineStart
            // A trailing CR may yet turn out to be the line's end; any other byte is content.
            let contentSoFar = scanned > 0 && buffer[buffer.count - 1] == ASCII.cr ? scanned - 1 : scanned
            if contentSoFar > maxContentBytes { throw tooLong }
            return nil
        }
        let endsWithCR = lf > lineStart && buffer[lf - 1] == ASCII.cr
        let contentEnd = endsWithCR ? lf - 1 : lf
        if contentEnd - lineStart > maxContentBytes { throw tooLong }
        guard endsWithCR else { throw .badRequest("line ends with a bare LF") }
        start = lf + 1
        scanned = 0
        return lineStart..<contentEnd
    }

    /// The next header or trailer line; the section's remaining byte budget bounds it (431).
    private mutating func nextFieldLine() throws(HTTPParseError) -> Range<Int>? {
        // A field line needs its CRLF within the budget; the empty line ending the section is free.
        let remaining = limits.maxHeaderBlockBytes - pending.sectionBytes
        return try nextLine(maxContentBytes: max(remaining - 2, 0), tooLong: Self.headerBlockTooLarge)
    }

    /// Counts a field line against the section limits (431).
    private mutating func countFieldLine(_ line: Range<Int>) throws(HTTPParseError) {
        pending.sectionBytes += line.count + 2
        if pending.sectionBytes > limits.maxHeaderBlockBytes { throw Self.headerBlockTooLarge }
        pending.sectionFields += 1
        if pending.sectionFields > limits.maxHeaderFields { throw Self.tooManyFields }
    }

    // MARK: Request line (RFC 9112 §3)

    private mutating func parseRequestLine(_ line: Range<Int>) throws(HTTPParseError) {
        let parsed = try buffer.withUnsafeBufferPointer {
            (bytes) throws(HTTPParseError) -> (method: HTTPMethod, target: String, version: HTTPVersion) in
            try Self.parseRequestLine(UnsafeBufferPointer(rebasing: bytes[line]))
        }
        pending.head.method = parsed.method
        pending.head.target = parsed.target
        pending.head.version = parsed.version
    }

    static func parseRequestLine(
        _ line: UnsafeBufferPointer<UInt8>
    ) throws(HTTPParseError) -> (method: HTTPMethod, target: String, version: HTTPVersion) {
        let count = line.count
        var i = 0
        while i < count, ASCII.isTchar(line[i]) { i += 1 }
        guard i > 0, i < count, line[i] == ASCII.sp else { throw .badRequest("invalid method") }
        let methodEnd = i
        i += 1

        // Anything but VCHAR (CTLs, SP, DEL, non-ASCII) ends or spoils the target.
        let targetStart = i
        while i < count, line[i] > ASCII.sp, line[i] < ASCII.del { i += 1 }
        guard i > targetStart, i < count, line[i] == ASCII.sp else {
            throw .badRequest("invalid request target")
        }
        let targetEnd = i
        i += 1

        let version = try parseVersion(UnsafeBufferPointer(rebasing: line[i...]))
        let method = HTTPMethod(
            rawValue: String(decoding: UnsafeBufferPointer(rebasing: line[..<methodEnd]), as: UTF8.self))
        let target = UnsafeBufferPointer(rebasing: line[targetStart..<targetEnd])
        try checkTargetForm(target, method: method)
        return (method, String(decoding: target, as: UTF8.self), version)
    }

    /// `HTTP-version = "HTTP" "/" DIGIT "." DIGIT` (§2.3): 1.0 and 1.1 are served, other
    /// well-formed versions are 505.
    static func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> HTTPVersion {
        guard bytes.count == 8, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50,
            bytes[4] == ASCII.slash, ASCII.isDigit(bytes[5]), bytes[6] == 0x2E, ASCII.isDigit(bytes[7])
        else { throw .badRequest("malformed HTTP version") }
        switch (bytes[5], bytes[7]) {
        case (0x31, 0x31): return .http1_1
        case (0x31, 0x30): return .http1_0
        default: throw HTTPParseError(status: .httpVersionNotSupported, reason: "HTTP version not supported")
        }
    }

    /// origin-form, absolute-form (`scheme ":" …`), or asterisk-form for OPTIONS (§3.2).
    static func checkTargetForm(_ target: UnsafeBufferPointer<UInt8>, method: HTTPMethod) throws(HTTPParseError) {
        switch target[0] {
        case ASCII.slash:
            return
        case ASCII.asterisk:
            guard target.count == 1, method == .options else { throw .badRequest("invalid request target") }
        default:
            // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1)
            guard ASCII.isAlpha(target[0]) else { throw .badRequest("invalid request target") }
            var i = 1
            while i < target.count {
                let b = target[i]
                if b == ASCII.colon { return }
                guard ASCII.isAlpha(b) || ASCII.isDigit(b) || b == 0x2B || b == 0x2D || b == 0x2E else { break }
                i += 1
            }
            throw .badRequest("invalid request target")
        }
    }

    // MARK: Fields (RFC 9112 §5, RFC 9110 §5)

    private mutating func parseHeaderField(_ line: Range<Int>) throws(HTTPParseError) {
        try countFieldLine(line)
        var facts = pending.facts
        let field = try buffer.withUnsafeBufferPointer {
            (bytes) throws(HTTPParseError) -> (name: String, value: String) in
            let fieldLine = UnsafeBufferPointer(rebasing: bytes[line])
            let (nameEnd, valueRange) = try Self.splitField(fieldLine)
            let name = UnsafeBufferPointer(rebasing: fieldLine[..<nameEnd])
            let value = UnsafeBufferPointer(rebasing: fieldLine[valueRange])
            try facts.record(name: name, value: value)
            return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
        pending.facts = facts
        if pending.head.headers.count == 0 { pending.head.headers.fields.reserveCapacity(16) }
        pending.head.headers.add(name: field.name, value: field.value)
    }

    /// Trailer fields are checked like header fields, then discarded (§7.1.2).
    private mutating func parseTrailerField(_ line: Range<Int>) throws(HTTPParseError) {
        try countFieldLine(line)
        _ = try buffer.withUnsafeBufferPointer { (bytes) throws(HTTPParseError) in
            try Self.splitField(UnsafeBufferPointer(rebasing: bytes[line]))
        }
    }

    /// Splits `field-name ":" OWS field-value OWS` into the name's end and the value's range.
    static func splitField(_ line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> (nameEnd: Int, value: Range<Int>) {
        let count = line.count
        var i = 0
        while i < count, ASCII.isTchar(line[i]) { i += 1 }
        guard i < count, line[i] == ASCII.colon else {
            if i == 0, ASCII.isWhitespace(line[0]) {
                throw .badRequest("obsolete line folding or whitespace before a header field")
            }
            if i < count, ASCII.isWhitespace(line[i]) {
                throw .badRequest("whitespace between header field name and colon")
            }
            throw .badRequest("invalid header field name")
        }
        guard i > 0 else { throw .badRequest("empty header field name") }
        let nameEnd = i
        i += 1
        while i < count, ASCII.isWhitespace(line[i]) { i += 1 }
        let valueStart = i
        guard ASCII.allFieldValueBytes(UnsafeBufferPointer(rebasing: line[valueStart...])) else {
            throw .badRequest("invalid character in header field value")
        }
        var valueEnd = count
        while valueEnd > valueStart, ASCII.isWhitespace(line[valueEnd - 1]) { valueEnd -= 1 }
        return (nameEnd, valueStart..<valueEnd)
    }

    // MARK: Head (RFC 9112 §6, §9.3; RFC 9110 §7.2, §10.1.1)

    private mutating func finishHead() throws(HTTPParseError) -> HTTPParserEvent {
        let facts = pending.facts
        let version = pending.head.version
        if facts.hostCount > 1 { throw .badRequest("more than one Host header field") }
        if facts.hostCount == 0, version == .http1_1 { throw .badRequest("missing Host header field") }

        let bodyPhase: Phase
        let bodyFollows: Bool
        pending.maxBodyBytes = limits.maxBodyBytes(for: pending.head)
        let isUpload = limits.isUpload(pending.head)
        pending.bodyTooLarge = isUpload ? Self.uploadBodyTooLarge : Self.bodyTooLarge
        pending.head.streamsBody = isUpload
        if facts.hasTransferEncoding {
            // §6.1: both framings present is the classic smuggling vector; refuse, don't pick one.
            if facts.contentLength != nil {
                throw .badRequest("both Transfer-Encoding and Content-Length")
            }
            if version == .http1_0 { throw .badRequest("Transfer-Encoding in an HTTP/1.0 request") }
            if facts.unknownCoding {
                throw HTTPParseError(status: .notImplemented, reason: "unsupported transfer coding")
            }
            if facts.chunkedCount != 1 { throw .badRequest("invalid Transfer-Encoding") }
            bodyPhase = .chunkSizeLine
            bodyFollows = true
        } else if let length = facts.contentLength {
            if facts.contentLengthConflict { throw .badRequest("conflicting Content-Length values") }
            if length > pending.maxBodyBytes { throw pending.bodyTooLarge }
            bodyPhase = .fixedBody(remaining: length)
            bodyFollows = length > 0
            // A buffered body reserves up to 64 KiB and grows: most are tiny JSON. An upload is streamed.
            if bodyFollows, !isUpload { pending.body.reserveCapacity(min(length, 64 * 1024)) }
        } else {
            bodyPhase = .fixedBody(remaining: 0)
            bodyFollows = false
        }

        if version == .http1_1 {
            if facts.expectOther {
                throw HTTPParseError(status: .expectationFailed, reason: "unsupported expectation")
            }
            pending.head.expectsContinue = facts.expectContinue && bodyFollows
            pending.head.keepAlive = !facts.connectionClose
        } else {
            pending.head.expectsContinue = false
            pending.head.keepAlive = facts.connectionKeepAlive && !facts.connectionClose
        }
        phase = bodyPhase
        return .head(pending.head)
    }

    // MARK: Body (RFC 9112 §6.2, §7.1)

    /// Moves up to `count` buffered bytes into the body; returns how many it moved.
    private mutating func takeBody(upTo count: Int) -> Int {
        let taken = min(count, buffer.count - start)
        if taken > 0 {
            pending.body.append(contentsOf: buffer[start..<(start + taken)])
            pending.bodyCount += taken
            start += taken
        }
        return taken
    }

    /// Removes and returns up to `count` buffered body bytes (a streamed body); nil when none is buffered.
    private mutating func takeChunk(upTo count: Int) -> [UInt8]? {
        let taken = min(count, buffer.count - start)
        guard taken > 0 else { return nil }
        let chunk = Array(buffer[start..<(start + taken)])
        pending.bodyCount += taken
        start += taken
        return chunk
    }

    /// `chunk-size [ chunk-ext ] CRLF`; a size pushing the body over `maxBodyBytes` is 413 at once.
    /// Returns false when the line is not complete yet.
    private mutating func parseChunkSizeLine() throws(HTTPParseError) -> Bool {
        let extensionBudget = limits.maxChunkExtensionBytes - pending.extensionBytes
        guard
            let line = try nextLine(
                maxContentBytes: Self.maxChunkSizeDigits + extensionBudget, tooLong: Self.chunkExtensionsTooLong)
        else { return false }
        let (size, extensionBytes) = try buffer.withUnsafeBufferPointer {
            (bytes) throws(HTTPParseError) -> (UInt64, Int) in
            try Self.parseChunkSize(UnsafeBufferPointer(rebasing: bytes[line]))
        }
        if extensionBytes > extensionBudget { throw Self.chunkExtensionsTooLong }
        pending.extensionBytes += extensionBytes
        if size > UInt64(pending.maxBodyBytes - pending.bodyCount) { throw pending.bodyTooLarge }
        if size == 0 {
            pending.sectionBytes = 0
            pending.sectionFields = 0
            phase = .trailerLines
        } else {
            phase = .chunkData(remaining: Int(size))
        }
        return true
    }

    /// The size and the extension byte count of a chunk-size line (without CRLF).
    static func parseChunkSize(_ line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> (size: UInt64, extensionBytes: Int) {
        var i = 0
        var size: UInt64 = 0
        while i < line.count, let digit = ASCII.hexValue(line[i]) {
            guard i < maxChunkSizeDigits else { throw .badRequest("chunk size has too many digits") }
            size = size << 4 | UInt64(digit)
            i += 1
        }
        guard i > 0 else { throw .badRequest("invalid chunk size") }
        let extensions = UnsafeBufferPointer(rebasing: line[i...])
        try validateChunkExtensions(extensions)
        return (size, extensions.count)
    }

    /// `chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )`, where
    /// `chunk-ext-val = token / quoted-string` (§7.1.1). Checked, then ignored.
    static func validateChunkExtensions(_ ext: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) {
        let invalid = HTTPParseError.badRequest("invalid chunk extension")
        let count = ext.count
        var i = 0
        func skipWhitespace(_ j: inout Int) { while j < count, ASCII.isWhitespace(ext[j]) { j += 1 } }
        func skipToken(_ j: inout Int) throws(HTTPParseError) {
            let tokenStart = j
            while j < count, ASCII.isTchar(ext[j]) { j += 1 }
            if j == tokenStart { throw invalid }
        }
        while i < count {
            skipWhitespace(&i)
            guard i < count, ext[i] == ASCII.semicolon else { throw invalid }
            i += 1
            skipWhitespace(&i)
            try skipToken(&i)
            var j = i
            skipWhitespace(&j)
            guard j < count, ext[j] == ASCII.equals else {
                i = j
                continue
            }
            i = j + 1
            skipWhitespace(&i)
            guard i < count, ext[i] == ASCII.dquote else {
                try skipToken(&i)
                continue
            }
            // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE (RFC 9110 §5.6.4)
            i += 1
            var closed = false
            while i < count {
                let b = ext[i]
                i += 1
                if b == ASCII.dquote {
                    closed = true
                    break
                }
                guard ASCII.isFieldValueByte(b) else { throw invalid }
                if b == ASCII.backslash {
                    guard i < count, ASCII.isFieldValueByte(ext[i]) else { throw invalid }
                    i += 1
                }
            }
            if !closed { throw invalid }
        }
    }

    private mutating func completeRequest() -> HTTPParserEvent {
        // Swapped out, so the head and body move into the request instead of being copied from
        // `pending` and then released with it (a retain and a release per field).
        var finished = Pending()
        swap(&finished, &pending)
        phase = .requestLine
        return finished.head.streamsBody ? .bodyEnd : .request(HTTPRequest(head: finished.head, body: finished.body))
    }

    // MARK: Errors

    static let uriTooLong = HTTPParseError(status: .uriTooLong, reason: "request line too long")
    static let headerBlockTooLarge = HTTPParseError(
        status: .requestHeaderFieldsTooLarge, reason: "header section too large")
    static let tooManyFields = HTTPParseError(status: .requestHeaderFieldsTooLarge, reason: "too many header fields")
    static let bodyTooLarge = HTTPParseError(status: .contentTooLarge, reason: "request body too large")
    /// The 413 of an upload (`HTTPLimits.isUpload`) over `maxUploadBodyBytes`.
    public static let uploadBodyTooLarge = HTTPParseError(status: .contentTooLarge, reason: "upload too large")
    static let chunkExtensionsTooLong = HTTPParseError.badRequest("chunk extensions too long")
    static let missingChunkCRLF = HTTPParseError.badRequest("missing CRLF after chunk data")
}

extension HTTPRequestParser.HeadFacts {
    /// Notes what the framing and connection fields say; other fields pass through untouched.
    mutating func record(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) {
        switch name.count {
        case 4 where ASCII.equalsIgnoringCase(name, "host"):
            hostCount += 1
        case 6 where ASCII.equalsIgnoringCase(name, "expect"):
            try ASCII.forEachListElement(value) { element in
                if element.isEmpty { return }
                if ASCII.equalsIgnoringCase(element, "100-continue") {
                    expectContinue = true
                } else {
                    expectOther = true
                }
            }
        case 10 where ASCII.equalsIgnoringCase(name, "connection"):
            try ASCII.forEachListElement(value) { element in
                if ASCII.equalsIgnoringCase(element, "close") {
                    connectionClose = true
                } else if ASCII.equalsIgnoringCase(element, "keep-alive") {
                    connectionKeepAlive = true
                }
            }
        case 14 where ASCII.equalsIgnoringCase(name, "content-length"):
            try recordContentLength(value)
        case 17 where ASCII.equalsIgnoringCase(name, "transfer-encoding"):
            try recordTransferEncoding(value)
        default:
            break
        }
    }

    /// `Content-Length = 1*DIGIT` (RFC 9110 §8.6); a list or repeat must repeat the same number.
    private mutating func recordContentLength(_ value: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) {
        try ASCII.forEachListElement(value) { (element) throws(HTTPParseError) in
            guard !element.isEmpty else { throw .badRequest("invalid Content-Length") }
            var length = 0
            for digit in element {
                guard ASCII.isDigit(digit) else { throw .badRequest("invalid Content-Length") }
                // Saturate instead of overflowing: anything this large is over any limit (413).
                if length >= 100_000_000_000_000_000 {
                    length = .max
                } else {
                    length = length * 10 + Int(digit - 0x30)
                }
            }
            if let previous = contentLength {
                if previous != length { contentLengthConflict = true }
            } else {
                contentLength = length
            }
        }
    }

    /// `Transfer-Encoding = #transfer-coding` (RFC 9112 §6.1): codings are tokens, optionally
    /// with `;` parameters; empty list elements are skipped.
    private mutating func recordTransferEncoding(_ value: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) {
        hasTransferEncoding = true
        try ASCII.forEachListElement(value) { (element) throws(HTTPParseError) in
            if element.isEmpty { return }
            var i = 0
            while i < element.count, ASCII.isTchar(element[i]) { i += 1 }
            guard i > 0 else { throw .badRequest("invalid Transfer-Encoding") }
            let coding = UnsafeBufferPointer(rebasing: element[..<i])
            while i < element.count, ASCII.isWhitespace(element[i]) { i += 1 }
            let hasParameters = i < element.count
            if hasParameters, element[i] != ASCII.semicolon { throw .badRequest("invalid Transfer-Encoding") }
            if ASCII.equalsIgnoringCase(coding, "chunked") {
                if hasParameters { throw .badRequest("invalid Transfer-Encoding") }
                chunkedCount += 1
            } else {
                unknownCoding = true
            }
        }
    }
}
