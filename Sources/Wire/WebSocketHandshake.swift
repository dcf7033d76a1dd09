/// The server's side of the opening handshake (RFC 6455 §4.2.1–4.2.2), as pure functions over a
/// parsed request head.
///
/// The accept key is `base64(SHA-1(key + GUID))`. Wire imports none of our other modules (the
/// fuzzers compile it alone), so the caller passes the SHA-1 function (e.g. `Hashing.sha1`); the
/// base64 is local. Origin checking is the application's job: `Accepted.origin` exposes it.
public enum WebSocketHandshake {
    /// RFC 6455 §1.3: appended to the client's key before hashing.
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    /// The only protocol version we speak (RFC 6455 §4.1).
    public static let version = "13"

    /// A handshake the server accepts.
    public struct Accepted: Sendable {
        /// The 101 Switching Protocols response to write; the connection then speaks WebSocket.
        public var response: HTTPResponse
        /// The permessage-deflate parameters agreed, if any; pass them to `WebSocketProtocol`.
        public var deflate: PerMessageDeflateParameters?
        /// The `Origin` field, for the application's origin policy (RFC 6455 §10.2).
        public var origin: String?
    }

    /// A handshake the server refuses, with the response to write before closing.
    public struct Rejected: Sendable, Equatable {
        /// Why, in short fixed text (safe to send).
        public var reason: String
        /// 400 Bad Request; 426 Upgrade Required (not a WebSocket request at all, or a version
        /// other than 13 — then with `Sec-WebSocket-Version: 13`, RFC 6455 §4.2.2).
        public var status: HTTPStatus
        /// Fields the response must carry.
        public var headers: HTTPHeaders

        /// The response: status, fields, and the reason as a plain-text body.
        public var response: HTTPResponse {
            var fields = headers
            fields.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            return HTTPResponse(status: status, headers: fields, body: Array((reason + "\n").utf8))
        }

        /// Same reason, status and fields in the same order.
        public static func == (a: Rejected, b: Rejected) -> Bool {
            a.reason == b.reason && a.status == b.status
                && a.headers.map { "\($0.name): \($0.value)" } == b.headers.map { "\($0.name): \($0.value)" }
        }
    }

    /// The outcome of `evaluate`.
    public enum Result: Sendable {
        case accept(Accepted)
        case reject(Rejected)
    }

    /// Checks an upgrade request (RFC 6455 §4.2.1): GET, HTTP/1.1 or later, `Upgrade` with the
    /// `websocket` token, `Connection` with the `upgrade` token (both case-insensitive),
    /// exactly one `Sec-WebSocket-Key` that base64-decodes to 16 bytes, and
    /// `Sec-WebSocket-Version: 13`. Negotiates permessage-deflate when `deflate` is given.
    public static func evaluate(
        _ head: HTTPRequestHead, deflate: PerMessageDeflateConfiguration? = nil, sha1: ([UInt8]) -> [UInt8]
    ) -> Result {
        let headers = head.headers
        guard headers.containsToken(name: "Upgrade", "websocket") else {
            var fields = HTTPHeaders()
            fields.add(name: "Upgrade", value: "websocket")
            fields.add(name: "Connection", value: "Upgrade")
            fields.add(name: "Sec-WebSocket-Version", value: version)
            return .reject(Rejected(reason: "WebSocket upgrade required", status: .upgradeRequired, headers: fields))
        }
        guard head.method == .get else { return .reject(badRequest("WebSocket handshake must be GET")) }
        guard head.version.major > 1 || (head.version.major == 1 && head.version.minor >= 1) else {
            return .reject(badRequest("WebSocket handshake needs HTTP/1.1"))
        }
        guard headers.containsToken(name: "Connection", "upgrade") else {
            return .reject(badRequest("Connection must include upgrade"))
        }
        let versions = headers[all: "Sec-WebSocket-Version"].flatMap { $0.split(separator: ",") }
            .map { String($0.trimmingASCIIWhitespace()) }
        guard versions == [version] else {
            var fields = HTTPHeaders()
            fields.add(name: "Sec-WebSocket-Version", value: version)
            return .reject(Rejected(reason: "unsupported WebSocket version", status: .upgradeRequired, headers: fields))
        }
        // RFC 6455 §4.2.1 item 5: a base64-encoded 16-byte value, sent once.
        let keys = headers[all: "Sec-WebSocket-Key"]
        guard keys.count == 1 else { return .reject(badRequest("invalid Sec-WebSocket-Key")) }
        let key = String(keys[0][...].trimmingASCIIWhitespace())
        guard let decoded = Base64.decode(key), decoded.count == 16 else {
            return .reject(badRequest("invalid Sec-WebSocket-Key"))
        }

        var fields = HTTPHeaders()
        fields.add(name: "Upgrade", value: "websocket")
        fields.add(name: "Connection", value: "Upgrade")
        fields.add(name: "Sec-WebSocket-Accept", value: acceptValue(key: key, sha1: sha1))
        var agreed: PerMessageDeflateParameters?
        if let deflate,
            let agreement = PerMessageDeflate.negotiate(offers: headers[all: "Sec-WebSocket-Extensions"], configuration: deflate)
        {
            fields.add(name: "Sec-WebSocket-Extensions", value: agreement.responseHeaderValue)
            agreed = agreement.parameters
        }
        return .accept(
            Accepted(
                response: HTTPResponse(status: .switchingProtocols, headers: fields), deflate: agreed,
                origin: headers[first: "Origin"]))
    }

    /// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2 step 5.4).
    public static func acceptValue(key: String, sha1: ([UInt8]) -> [UInt8]) -> String {
        Base64.encode(sha1(Array((key + guid).utf8)))
    }

    private static func badRequest(_ reason: String) -> Rejected {
        Rejected(reason: reason, status: .badRequest, headers: HTTPHeaders())
    }
}

/// Standard base64 (RFC 4648 §4) with padding, for the handshake's key and accept value.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a padded base64 string, or nil when it is not canonical base64 (wrong
    /// length, characters outside the alphabet, misplaced padding, non-zero padding bits).
    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            var values: [UInt32] = []
            var padding = 0
            for j in 0..<4 {
                let c = chars[i + j]
                if c == UInt8(ascii: "=") {
                    guard i + 4 == chars.count, j >= 2 else { return nil }
                    padding += 1
                    values.append(0)
                } else {
                    guard padding == 0, let v = value(c) else { return nil }
                    values.append(v)
                }
            }
            let n = values[0] << 18 | values[1] << 12 | values[2] << 6 | values[3]
            out.append(UInt8(n >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(n & 0xFF)) }
            if padding == 2, n & 0xFFFF != 0 { return nil }
            if padding == 1, n & 0xFF != 0 { return nil }
            i += 4
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(c - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
