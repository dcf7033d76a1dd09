import Foundation
import Hashing
public import Storage

/// The server's keyed-hash secret (invite-code HMAC), kept in a 0600 file in the data directory and
/// never in the database, so a leaked database file reveals no invite code.
public enum ServerSecret {
    /// Bytes of key material.
    public static let byteCount = 32

    /// Errors reading or creating the secret file; each names the path and the failing call.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads the secret at `path`, creating it (exclusively, mode 0600) with fresh random bytes when
    /// missing. Refuses a file that is group/world accessible or of the wrong size.
    public static func loadOrCreate(path: String) throws(Failure) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try SecretFile.loadOrCreate(path: path, what: "server secret") {
                Array((Base64URL.encode(SecureRandom.bytes(byteCount)) + "\n").utf8)
            }
        } catch {
            throw Failure(description: error.description)
        }
        guard
            let key = Base64URL.decode(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            key.count == byteCount
        else { throw Failure(description: "server secret \(path) is malformed (expected \(byteCount) base64url bytes)") }
        return key
    }

    /// What the fingerprint is an HMAC of: a fixed label, so it reveals nothing else about the key.
    static let fingerprintLabel = Array("chronir server secret fingerprint".utf8)

    /// Records HMAC-SHA-256(`secret`, label) in `server_secret_fingerprint` the first time (migration
    /// 0009), and afterwards refuses a `secret` whose fingerprint differs: every invite code in the
    /// database is keyed by the first secret, so a lost, regenerated or per-instance `server.secret`
    /// must stop start-up rather than quietly turn every code invalid. Call in a write transaction.
    public static func checkFingerprint(_ secret: [UInt8], at now: Int64, on db: any SQLConnection) throws {
        let fingerprint = HMACSHA256.authenticationCode(key: secret, message: fingerprintLabel)
        try db.run(
            """
            INSERT INTO server_secret_fingerprint (id, fingerprint, created_ms) VALUES (1, ?1, ?2)
            ON CONFLICT (id) DO NOTHING
            """, [.blob(fingerprint), .integer(now)])
        guard case .blob(let recorded) = try db.scalar("SELECT fingerprint FROM server_secret_fingerprint WHERE id = 1")
        else { throw StoreError.corruptRow(table: "server_secret_fingerprint") }
        guard ConstantTime.equals(recorded, fingerprint) else {
            throw Failure(
                description:
                    """
                    server.secret is not the secret this database's invite codes were made with (another instance's, or regenerated): \
                    copy the server.secret of the first instance into --data-dir
                    """
            )
        }
    }
}
