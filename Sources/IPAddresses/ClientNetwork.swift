import Glibc

/// The network a client address stands for wherever clients are counted (failed logins and invite
/// codes, registrations, connections and WebSockets per client). An IPv4 address is one network; an
/// IPv6 address counts as its /64, because a single subscriber routinely holds a whole /64 (2^64
/// addresses) and would otherwise get a fresh budget per address; an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`, a dual-stack listener's IPv4 peer) is its IPv4 address. The one place that
/// parses client addresses: text through `inet_pton`, socket addresses through `key(ipv4:)` and
/// `key(ipv6:)` (Transport's `PeerNetwork`).
public enum ClientNetwork {
    /// `"203.0.113.7"` → `"203.0.113.7"`; `"2001:db8:1:2:aa::1"` → `"2001:db8:1:2::/64"`;
    /// `"::ffff:203.0.113.7"` → `"203.0.113.7"`; a `%zone` suffix is ignored. Text that is not an IP
    /// address is returned as is.
    public static func rateLimitKey(_ address: String) -> String {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return key(ipv4: UInt32(bigEndian: v4.s_addr)) }
        let unzoned = address.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        guard let unzoned, inet_pton(AF_INET6, unzoned, &v6) == 1 else { return address }
        return key(ipv6: withUnsafeBytes(of: v6) { Array($0) })
    }

    /// The coarse network a user is shown for one of their sessions (where they signed in, not the
    /// exact address): `"203.0.113.7"` → `"203.0.113.0/24"`; `"2001:db8:1:2::1"` → `"2001:db8:1::/48"`;
    /// `"::ffff:203.0.113.7"` → `"203.0.113.0/24"`. Nil for text that is not an IP address.
    public static func coarse(_ address: String) -> String? {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return coarse(ipv4: UInt32(bigEndian: v4.s_addr)) }
        let unzoned = address.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        guard let unzoned, inet_pton(AF_INET6, unzoned, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return coarse(ipv4: UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15]))
        }
        let groups = (0..<3).map { String(UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/48"
    }

    /// `a.b.c.0/24` of an IPv4 address in host byte order.
    private static func coarse(ipv4 host: UInt32) -> String { "\(host >> 24).\(host >> 16 & 0xFF).\(host >> 8 & 0xFF).0/24" }

    /// Whether `text` is a literal IPv4 or IPv6 address (no port, no brackets, no zone).
    public static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// The key of an IPv4 address in host byte order.
    public static func key(ipv4 host: UInt32) -> String {
        "\(host >> 24).\(host >> 16 & 0xFF).\(host >> 8 & 0xFF).\(host & 0xFF)"
    }

    /// The key of the 16 bytes of an IPv6 address (network order).
    public static func key(ipv6 bytes: [UInt8]) -> String {
        precondition(bytes.count == 16, "an IPv6 address is 16 bytes")
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = (0..<4).map { String(UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
