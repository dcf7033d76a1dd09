import IPAddresses
public import Wire

/// The client's IP address as the rate limits and the access log see it. Behind a reverse proxy
/// every connection comes from the proxy, so per-IP limits would lump all clients together: when
/// the peer is one of `AppConfiguration.trustedProxies`, the client is the right-most `X-Forwarded-For`
/// entry that is not itself a trusted proxy (entries to its left were written by the client and
/// prove nothing). Without trusted proxies, or from any other peer, the header is ignored — a
/// client cannot pick its own address to dodge the limits.
public enum ClientAddress {
    /// `X-Forwarded-For` entries examined, from the right (named limit: a chain of proxies is short;
    /// a long header is a client padding it).
    public static let maxForwardedEntries = 16

    /// The client address for a request from `peer` carrying `headers`.
    public static func resolve(peer: String, headers: HTTPHeaders, trustedProxies: Set<String>) -> String {
        guard !trustedProxies.isEmpty, trustedProxies.contains(peer) else { return peer }
        var entries: [Substring] = []
        for value in headers[all: "x-forwarded-for"] {
            entries += value.split(separator: ",").map { $0.trimmingASCIIWhitespace() }
        }
        for entry in entries.reversed().prefix(maxForwardedEntries) {
            let address = String(entry)
            guard ClientNetwork.isIPAddress(address) else { return peer }  // malformed: trust nothing further
            if !trustedProxies.contains(address) { return address }
        }
        return peer
    }
}
