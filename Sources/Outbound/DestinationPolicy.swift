/// Where the client may connect (docs/notifications.md, "SSRF"). The check runs on the address of
/// every socket about to be connected, after DNS — so a name that resolves (or re-resolves) to an
/// internal address is refused as the address itself would be.
public struct DestinationPolicy: Sendable {
    /// Whether addresses of every class but `AddressClass.global` may be connected to. False in
    /// production (`--push-allow-private-endpoints` turns it on); tests on loopback set it.
    public var allowPrivateDestinations: Bool
    /// Whether `http://` URLs are allowed; false allows `https://` only. Tests' plain servers.
    public var allowPlainHTTP: Bool

    /// The production policy: public addresses, https only.
    public static let publicHTTPSOnly = DestinationPolicy(allowPrivateDestinations: false, allowPlainHTTP: false)

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
