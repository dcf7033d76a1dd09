import Glibc

/// A blocking TCP client for tests against a server on 127.0.0.1: raw bytes in and out, plus a
/// small HTTP/1.1 response reader (status line, headers, `Content-Length` body, or body until
/// close). Every read has a timeout, so a broken server fails a test instead of hanging it.
///
/// ```swift
/// let client = try LoopbackClient(port: port)
/// let (status, headers, body) = try client.request("GET", "/v1/health")
/// ```
public final class LoopbackClient {
    /// A parsed response: status code, header fields in order, body.
    public typealias Response = (status: Int, headers: [(String, String)], body: [UInt8])

    /// What went wrong talking to the server.
    public enum Failure: Error, CustomStringConvertible {
        /// A socket call failed with `errno`.
        case system(call: String, errno: Int32)
        /// Nothing (more) arrived within the timeout; `received` holds what did.
        case timedOut(received: [UInt8])
        /// The server closed the connection before a full response; `received` holds what came.
        case closed(received: [UInt8])
        /// The bytes were not an HTTP/1.1 response.
        case malformed(String)

        public var description: String {
            switch self {
            case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
            case .timedOut(let received): "timed out after \(received.count) bytes: \(Self.preview(received))"
            case .closed(let received): "closed after \(received.count) bytes: \(Self.preview(received))"
            case .malformed(let reason): "malformed response: \(reason)"
            }
        }

        static func preview(_ bytes: [UInt8]) -> String {
            String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription
        }
    }

    /// The socket (blocking). Closed by `close()` or deinit.
    public private(set) var fd: Int32
    /// Default timeout for every read.
    public var timeout: Duration
    /// The default read timeout: a bound on a hang (a broken server fails the test instead of
    /// stalling the run), never a timing. Generous because the server's async handlers share the
    /// cooperative pool with every other test running in parallel: on a loaded machine the first reply
    /// of a test started early waited > 60 s once (EndToEndTests, load average 14), and under
    /// AddressSanitizer in CI no test finished in the first 158 s: the suites that set up PostgreSQL
    /// clusters and databases held both cooperative threads (a 120-s bound failed four tests there).
    public static let hangBound: Duration = .seconds(600)
    /// Bytes received and not consumed yet (the start of the next response when pipelining).
    public private(set) var buffered: [UInt8] = []

    /// Connects to `host:port` (IPv4 literal, default loopback), from `source` when given (an IPv4
    /// literal such as `127.0.0.2`: any 127.0.0.0/8 address is local, so one test can be several
    /// clients).
    public init(
        port: Int, host: String = "127.0.0.1", source: String? = nil, timeout: Duration = LoopbackClient.hangBound
    ) throws(Failure) {
        self.timeout = timeout
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", errno: errno) }
        if let source { try addressCall("bind", source, port: 0) { bind($0, $1, $2) } }
        try addressCall("connect", host, port: port) { connect($0, $1, $2) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    /// Calls `call` (`bind` or `connect`, named `name`) on the socket with the IPv4 address
    /// `host`:`port`; when it fails, closes the socket and throws.
    private func addressCall(
        _ name: String, _ host: String, port: Int, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) throws(Failure) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            close()
            throw .system(call: name, errno: code)
        }
    }

    /// Closes the socket (idempotent).
    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Closes the socket with a reset (`SO_LINGER` 0: RST, not FIN): the server's next read fails with
    /// `ECONNRESET` — a client that went away, as opposed to one that only half-closed.
    public func reset() {
        guard fd >= 0 else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    /// Shuts down the sending side (the server reads end-of-file), keeping the receiving side.
    public func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    // MARK: Raw bytes

    /// Sends all of `bytes`.
    public func send(_ bytes: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(call: "send", errno: errno)
            }
            offset += n
        }
    }

    /// Sends `text` as UTF-8.
    public func send(_ text: String) throws(Failure) { try send(Array(text.utf8)) }

    /// Waits up to `timeout` for bytes and returns what arrived (including earlier buffered bytes);
    /// empty means the peer closed. Throws `timedOut` if nothing arrived.
    public func receive(timeout: Duration? = nil) throws(Failure) -> [UInt8] {
        if !buffered.isEmpty {
            defer { buffered = [] }
            return buffered
        }
        guard try fill(timeout: timeout ?? self.timeout) else { return [] }
        defer { buffered = [] }
        return buffered
    }

    /// Reads until the server closes the connection and returns everything received.
    /// Throws `timedOut` if it is still open after `timeout`.
    public func readUntilClose(timeout: Duration? = nil) throws(Failure) -> [UInt8] {
        let deadline = Self.now() + (timeout ?? self.timeout)
        while true {
            let left = deadline - Self.now()
            if left <= .zero { throw .timedOut(received: buffered) }
            if try !fill(timeout: left) {
                defer { buffered = [] }
                return buffered
            }
        }
    }

    /// Whether the server closes the connection (EOF or reset) within `timeout`, discarding input.
    public func waitForClose(timeout: Duration? = nil) -> Bool {
        do {
            _ = try readUntilClose(timeout: timeout)
            return true
        } catch .system {
            return true  // ECONNRESET: closed too
        } catch {
            return false
        }
    }

    /// Reads more bytes into `buffered`; false on EOF.
    private func fill(timeout: Duration) throws(Failure) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let millis = Int32(clamping: max(0, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        let ready = poll(&pfd, 1, millis)
        if ready < 0 { throw .system(call: "poll", errno: errno) }
        if ready == 0 { throw .timedOut(received: buffered) }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw .system(call: "recv", errno: errno) }
        if n == 0 { return false }
        buffered.append(contentsOf: chunk[..<n])
        return true
    }

    // MARK: HTTP

    /// Sends a request and reads its response. Adds `Host` and, when there is a body or the
    /// method usually has one, `Content-Length`, unless `headers` already has them.
    public func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws(Failure) -> Response {
        try send(Self.requestBytes(method, path, headers: headers, body: body))
        return try readResponse(isHeadRequest: method == "HEAD")
    }

    /// Sends a request with a UTF-8 body and reads its response.
    public func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: String
    ) throws(Failure) -> Response {
        try request(method, path, headers: headers, body: Array(body.utf8))
    }

    /// The bytes of an HTTP/1.1 request, as `request` sends them.
    public static func requestBytes(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\n"
        func has(_ name: String) -> Bool { headers.contains { $0.0.lowercased() == name } }
        if !has("host") { text += "Host: 127.0.0.1\r\n" }
        if !has("content-length") && !has("transfer-encoding")
            && (!body.isEmpty || ["POST", "PUT", "PATCH"].contains(method))
        {
            text += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    /// Reads one response (skipping nothing: a `100 Continue` is returned as a response of its
    /// own). The body is `Content-Length` bytes, nothing for HEAD/1xx/204/304, otherwise
    /// everything until the server closes.
    public func readResponse(isHeadRequest: Bool = false, timeout: Duration? = nil) throws(Failure) -> Response {
        let deadline = Self.now() + (timeout ?? self.timeout)
        func more() throws(Failure) -> Bool {
            let left = deadline - Self.now()
            if left <= .zero { throw .timedOut(received: buffered) }
            return try fill(timeout: left)
        }
        var headEnd: Int?
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffered) {
                headEnd = end
                break
            }
            if try !more() { throw .closed(received: buffered) }
        }
        let headBytes = Array(buffered[..<headEnd!])
        let lines = String(decoding: headBytes, as: UTF8.self).splitLines("\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw .malformed("status line \(lines[0].debugDescription)")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed("header line \(line.debugDescription)") }
            let value = String(line[line.index(after: colon)...]).trimmed(" \t")
            headers.append((String(line[..<colon]), value))
        }
        buffered.removeFirst(headEnd! + 4)

        let bodyless = isHeadRequest || (100..<200).contains(status) || status == 204 || status == 304
        var body: [UInt8] = []
        if bodyless {
        } else if let length = Self.value(of: "content-length", in: headers).flatMap({ Int($0) }) {
            while buffered.count < length {
                if try !more() { throw .closed(received: buffered) }
            }
            body = Array(buffered[..<length])
            buffered.removeFirst(length)
        } else {
            while try more() {}
            body = buffered
            buffered = []
        }
        return (status, headers, body)
    }

    /// The first value of header `name` (case-insensitive) in `headers`.
    public static func value(of name: String, in headers: [(String, String)]) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// One request on a fresh connection, closed afterwards.
    public static func request(
        port: Int, _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws(Failure) -> Response {
        let client = try LoopbackClient(port: port)
        return try client.request(method, path, headers: headers, body: body)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }

    private static func now() -> ContinuousClock.Instant { ContinuousClock.now }
}

extension String {
    fileprivate func trimmed(_ set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }

    fileprivate func splitLines(_ separator: String) -> [String] {
        var parts: [String] = []
        var rest = Substring(self)
        while let range = rest.firstRange(of: separator) {
            parts.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        parts.append(String(rest))
        return parts
    }
}
