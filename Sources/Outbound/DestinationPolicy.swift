/// Where the client may connect (docs/notifications.md, "SSRF"). The check runs on the address of
/// every socket about to be connected, after DNS — so a name that resolves (or re-resolves) to an
/// internal address is refused as the address itself would be.
public struct DestinationPolicy: Sendable {
    /// Whether addresses of every class but `AddressClass.global` may be connected to. False for
    /// users' push endpoints in production (`--push-allow-private-endpoints` turns it on); true for
    /// `operatorConfigured` destinations; tests on loopback set it.
    public var allowPrivateDestinations: Bool
    /// Whether `http://` URLs are allowed; false allows `https://` only. Tests' plain servers.
    public var allowPlainHTTP: Bool

    /// The production policy: public addresses, https only.
    public static let publicHTTPSOnly = DestinationPolicy(allowPrivateDestinations: false, allowPlainHTTP: false)

    /// The policy of a client that only ever reaches destinations the operator configured — the
    /// notification webhook, OpenID key sets, the SMTP server: any address (a LAN relay, a loopback
    /// service), plain http allowed (the operator's start-up checks decide the scheme). Never a client
    /// that sends to a URL a user chose: users' Web Push endpoints go through a client of their own
    /// (`--push-allow-private-endpoints`), so no pooled connection is shared between the two.
    public static let operatorConfigured = DestinationPolicy(allowPrivateDestinations: true, allowPlainHTTP: true)

    /// A policy; see the properties.
    public init(allowPrivateDestinations: Bool = false, allowPlainHTTP: Bool = false) {
        self.allowPrivateDestinations = allowPrivateDestinations
        self.allowPlainHTTP = allowPlainHTTP
    }

    /// Whether a connection to `address` is allowed.
    public func allows(_ address: IPAddress) -> Bool {
        allowPrivateDestinations || !AddressClass.of(address).isRefusedByDefault
    }
}
