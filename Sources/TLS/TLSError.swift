/// Why a TLS context could not be built from the operator's material. Thrown at start-up and on a
/// reload (`SIGHUP`), never on the connection path: a connection's failures are `TLSEngine.CloseReason`.
public enum TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The certificate PEM holds no certificate, or one OpenSSL cannot parse.
    case invalidCertificate(String)
    /// The key PEM holds no private key OpenSSL can parse (an encrypted key is refused: no passphrase prompt).
    case invalidPrivateKey(String)
    /// The private key does not belong to the first certificate of the chain.
    case keyMismatch(String)
    /// libssl refused a setting (a library built without TLS 1.2, say).
    case configuration(String)

    /// The reason, for the operator's log.
    public var description: String {
        switch self {
        case .invalidCertificate(let why): "invalid certificate: \(why)"
        case .invalidPrivateKey(let why): "invalid private key: \(why)"
        case .keyMismatch(let why): "private key does not match the certificate: \(why)"
        case .configuration(let why): "TLS configuration refused: \(why)"
        }
    }
}
