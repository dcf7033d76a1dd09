public import Hashing
import Store

/// The server's VAPID key pair (RFC 8292; docs/notifications.md#web-push-sender--built):
/// `vapid.pem` in the data directory, an unencrypted PKCS#8 PEM P-256 key, mode 0600 — made on the
/// first start, read on every later one, like `server.secret`. Every instance of a cluster needs the
/// same file: browsers subscribed with its public key (`applicationServerKey`), and a push service
/// refuses messages signed by another key for those subscriptions.
public enum VAPIDKey {
    /// The file's name in the data directory.
    public static let fileName = "vapid.pem"

    /// Errors reading or creating the key file; each names the path and what is wrong.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The path of the key file in `dataDirectory`.
    public static func path(dataDirectory: String) -> String { dataDirectory + "/" + fileName }

    /// Reads the key in `dataDirectory`, creating it (exclusively, mode 0600) with a fresh key when
    /// missing. Refuses a file that group or others may access, or that is not a P-256 private key
    /// in PEM (a clear start-up error: a regenerated key would silently break every subscription).
    public static func loadOrCreate(dataDirectory: String) throws(Failure) -> P256.PrivateKey {
        let path = path(dataDirectory: dataDirectory)
        let data: [UInt8]
        do {
            data = try SecretFile.loadOrCreate(path: path, what: "VAPID key") { Array(P256.PrivateKey().pemRepresentation.utf8) }
        } catch {
            throw Failure(description: error.description)
        }
        do {
            return try P256.PrivateKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        } catch {
            throw Failure(
                description: """
                    VAPID key \(path) is not a P-256 private key in PEM (\(error)); restore it from a backup, or delete it \
                    to make a new one (every Web Push subscription must then be renewed)
                    """)
        }
    }

    /// The public key as `GET /v1/push/vapid-public-key` serves it and browsers take it: base64url
    /// (unpadded) of the 65-byte uncompressed point.
    public static func publicKeyText(_ key: P256.PrivateKey) -> String {
        Base64URL.encode(key.publicKey.x963Representation)
    }
}
