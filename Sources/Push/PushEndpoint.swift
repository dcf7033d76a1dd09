/// A push subscription's endpoint (RFC 8030 §5): an `https` URL given by a client, parsed strictly
/// enough that the sender can use its parts without re-parsing.
///
/// Accepted: `https://host[:port][/path][?query]` in printable ASCII, at most `maxByteCount` bytes;
/// host a DNS name (letters, digits, `-`, dots between non-empty labels of ≤ 63 bytes) or an IPv4 or
/// bracketed IPv6 literal. Refused: other schemes, user info, fragments, spaces and non-ASCII,
/// port 0 or past 65535. Whether the host is a *public* address is not decided here: the sender
/// checks the address it connects to (docs/notifications.md, SSRF).
public struct PushEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// Longest endpoint accepted, in bytes. Real push services use well under 600 (FCM ~ 200,
    /// Mozilla autopush ~ 250); 2,048 is the de-facto URL length browsers and servers support.
    public static let maxByteCount = 2_048
    /// Longest DNS label (RFC 1035 §2.3.4).
    static let maxLabelByteCount = 63

    /// The URL as given.
    public let url: String
    /// The host, lowercased (an IPv6 literal keeps its brackets).
    public let host: String
    /// The port when one other than 443 was given.
    public let port: Int?
    /// The request target: path and query, at least `/`.
    public let pathAndQuery: String

    /// The origin `https://host[:port]` (RFC 6454 §6.2), the VAPID `aud` (RFC 8292 §2).
    public var origin: String { "https://" + host + (port.map { ":\($0)" } ?? "") }

    /// The URL as given.
    public var description: String { url }

    /// Parses `text`; throws `.endpointTooLong`, `.endpointNotHTTPS` or `.endpointMalformed`.
    public init(_ text: String) throws(PushSubscriptionError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maxByteCount else { throw .endpointTooLong }
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { throw .endpointMalformed }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { throw .endpointMalformed }
        // RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
        let schemeBytes = bytes[..<colon]
        guard let first = schemeBytes.first, Self.isLetter(first),
            schemeBytes.allSatisfy({
                Self.isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
            })
        else { throw .endpointMalformed }
        guard String(decoding: schemeBytes, as: UTF8.self).lowercased() == "https" else { throw .endpointNotHTTPS }
        let rest = bytes[(colon + 1)...]
        guard rest.starts(with: "//".utf8), !bytes.contains(UInt8(ascii: "#")) else { throw .endpointMalformed }
        let authorityStart = rest.startIndex + 2
        let authorityEnd = rest[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authority = rest[authorityStart..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw .endpointMalformed }

        let hostBytes: ArraySlice<UInt8>
        let portBytes: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { throw .endpointMalformed }
            hostBytes = authority[authority.startIndex...close]
            let after = authority[(close + 1)...]
            guard after.isEmpty || after.first == UInt8(ascii: ":") else { throw .endpointMalformed }
            portBytes = after.isEmpty ? nil : after.dropFirst()
        } else if let portColon = authority.firstIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<portColon]
            portBytes = authority[(portColon + 1)...]
        } else {
            hostBytes = authority
            portBytes = nil
        }
        guard Self.isValidHost(hostBytes) else { throw .endpointMalformed }
        var port: Int?
        if let portBytes {
            guard (1...5).contains(portBytes.count), portBytes.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), (1...65_535).contains(value)
            else { throw .endpointMalformed }
            port = value == 443 ? nil : value
        }
        self.url = text
        self.host = String(decoding: hostBytes, as: UTF8.self).lowercased()
        self.port = port
        let target = String(decoding: rest[authorityEnd...], as: UTF8.self)
        self.pathAndQuery = target.isEmpty ? "/" : (target.hasPrefix("?") ? "/" + target : target)
    }

    /// A bracketed IPv6 literal (hex digits, `:` and `.` inside), or dot-separated labels of letters,
    /// digits and `-` (which also covers dotted IPv4).
    private static func isValidHost(_ host: ArraySlice<UInt8>) -> Bool {
        if host.first == UInt8(ascii: "[") {
            let inside = host.dropFirst().dropLast()
            return host.last == UInt8(ascii: "]") && inside.count >= 2
                && inside.allSatisfy { isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }
        }
        let labels = host.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return !host.isEmpty
            && labels.allSatisfy { label in
                (1...maxLabelByteCount).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
                    && label.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
            }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) || isLetter(byte) }
}
