import Hashing

/// A group's join code (docs/design.md#invite-codes): 6 characters from a 31-symbol
/// alphabet without look-alikes, drawn with a CSPRNG without modulo bias. Only
/// HMAC-SHA-256(server secret, normalised code) is ever stored, so a leaked database file reveals
/// no code and cannot be searched offline without the secret.
public struct InviteCode: Sendable, Equatable, CustomStringConvertible {
    /// No 0/O, 1/I/L: nothing a person could misread.
    public static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789".utf8)
    /// Characters in a code.
    public static let length = 6
    /// A code works for 7 days after it is created (or rotated).
    public static let lifetimeMilliseconds: Int64 = 7 * 24 * 3600 * 1000
    /// Per code: 5 failures within an hour lock it…
    public static let codeWindow = AttemptWindow(maxAttempts: 5, windowMilliseconds: 3600 * 1000)
    /// …for one hour.
    public static let lockMilliseconds: Int64 = 3600 * 1000
    /// Per user: 10 failed joins an hour, then 429.
    public static let userWindow = AttemptWindow(maxAttempts: 10, windowMilliseconds: 3600 * 1000)
    /// Per client IP: 30 failed joins an hour, then 429.
    public static let ipWindow = AttemptWindow(maxAttempts: 30, windowMilliseconds: 3600 * 1000)
    /// Attempt records are kept this long (retention sweeper).
    public static let attemptRetentionMilliseconds: Int64 = 24 * 3600 * 1000

    /// The canonical code text (uppercase, no separators).
    public let text: String

    /// A fresh random code.
    public static func generate() -> InviteCode {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        for _ in 0..<length {
            bytes.append(alphabet[Int(SecureRandom.uniform(upperBound: UInt32(alphabet.count)))])
        }
        return InviteCode(text: String(decoding: bytes, as: UTF8.self))
    }

    private init(text: String) { self.text = text }

    /// Parses user input: uppercases, drops spaces and dashes; nil unless exactly 6 alphabet symbols
    /// remain (`"abc-d23"` → `ABCD23`).
    public init?(normalizing input: String) {
        guard input.utf8.count <= 64 else { return nil }
        var bytes: [UInt8] = []
        for b in input.utf8 where b != 0x20 && b != 0x2D && b != 0x09 {
            let upper = (b >= 97 && b <= 122) ? b - 32 : b
            guard Self.alphabet.contains(upper) else { return nil }
            bytes.append(upper)
        }
        guard bytes.count == Self.length else { return nil }
        text = String(decoding: bytes, as: UTF8.self)
    }

    /// The stored form: HMAC-SHA-256 keyed with the server secret.
    public func hash(secret: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: secret, message: Array(text.utf8))
    }

    /// A copy only the server can read back (owners and admins see the current code again
    /// without rotating it, which would kill the one already shared): AES-128-GCM under a key derived
    /// from the server secret (HKDF-SHA-256, info `chronir invite-code seal v1`), a fresh random nonce,
    /// the group id as authenticated data so a copy cannot be moved to another group. Layout:
    /// nonce (12) ‖ ciphertext (6) ‖ tag (16). Lookups still go by `hash(secret:)` only.
    public func sealed(groupID: String, secret: [UInt8]) -> [UInt8] {
        let nonce = SecureRandom.bytes(AES128GCM.nonceByteCount)
        do {
            let key = try Self.sealingKey(secret: secret)
            return nonce + (try AES128GCM.seal(Array(text.utf8), key: key, nonce: nonce, authenticatedData: Array(groupID.utf8)))
        } catch {
            preconditionFailure("AES-128-GCM and HKDF lengths are constants: \(error)")
        }
    }

    /// Reads back a `sealed(groupID:secret:)` copy; nil if it does not authenticate (another secret,
    /// another group, damaged) or is not a code.
    public init?(unsealing sealed: [UInt8], groupID: String, secret: [UInt8]) {
        guard sealed.count > AES128GCM.nonceByteCount, let key = try? Self.sealingKey(secret: secret),
            let plain = try? AES128GCM.open(
                sealed.dropFirst(AES128GCM.nonceByteCount), key: key, nonce: Array(sealed.prefix(AES128GCM.nonceByteCount)),
                authenticatedData: Array(groupID.utf8))
        else { return nil }
        self.init(normalizing: String(decoding: plain, as: UTF8.self))
    }

    private static func sealingKey(secret: [UInt8]) throws(CryptoError) -> [UInt8] {
        try HKDF.deriveKey(
            inputKeyMaterial: secret, salt: [UInt8](), info: Array("chronir invite-code seal v1".utf8),
            outputByteCount: AES128GCM.keyByteCount)
    }

    public var description: String { text }
}
