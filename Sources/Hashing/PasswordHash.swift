/// Password storage with scrypt in a self-describing string:
///
///     scrypt$<log2 N>$<r>$<p>$<base64url salt>$<base64url key>
///
/// e.g. `scrypt$15$8$1$…22 chars…$…43 chars…`. The password is hashed as its UTF-8 bytes, with no
/// Unicode normalisation (callers that want NFC must normalise first).
public enum PasswordHash {
    /// Length of the random salt `make` generates, in bytes.
    public static let saltLength = 16

    /// Upper bounds on parameters accepted from an encoding, so a crafted or corrupted hash string
    /// cannot make `verify` allocate gigabytes or spin for minutes.
    static let maxLog2N = 20
    /// Largest r accepted by `verify`.
    static let maxR: UInt64 = 32
    /// Largest p accepted by `verify`.
    static let maxP: UInt64 = 16
    /// Largest scrypt working set accepted by `verify` (256 MiB).
    static let maxMemoryBytes: UInt64 = 256 << 20

    /// Self-describing encoding: `scrypt$<log2 N>$<r>$<p>$<base64url salt>$<base64url key>`, 16-byte random salt.
    public static func make(password: String, parameters: ScryptParameters = .interactive) -> String {
        guard let log2N = parameters.log2N else { preconditionFailure("scrypt: N must be a power of two > 1") }
        let salt = SecureRandom.bytes(saltLength)
        let key = Scrypt.derive(password: password.utf8, salt: salt, parameters: parameters)
        return "scrypt$\(log2N)$\(parameters.r)$\(parameters.p)$\(Base64URL.encode(salt))$\(Base64URL.encode(key))"
    }

    /// Recomputes with the encoded parameters and compares in constant time; false for malformed encodings.
    public static func verify(password: String, encoded: String) -> Bool {
        guard let stored = Encoded(encoded) else { return false }
        let key = Scrypt.derive(password: password.utf8, salt: stored.salt, parameters: stored.parameters)
        return ConstantTime.equals(key, stored.key)
    }

    /// The parsed fields of an encoding, validated against the bounds above.
    struct Encoded {
        /// Cost parameters, with `keyLength` equal to the stored key's length.
        var parameters: ScryptParameters
        /// The stored salt.
        var salt: [UInt8]
        /// The stored derived key.
        var key: [UInt8]

        /// Parses `text`; nil unless every field is present, canonical and within bounds (the key must be
        /// 32–64 bytes, so a truncated stored key is refused rather than checked as a shorter prefix).
        init?(_ text: String) {
            let fields = text.split(separator: "$", omittingEmptySubsequences: false)
            guard fields.count == 6, fields[0] == "scrypt",
                let log2N = Self.canonicalNumber(fields[1]), (1...UInt64(PasswordHash.maxLog2N)).contains(log2N),
                let r = Self.canonicalNumber(fields[2]), (1...PasswordHash.maxR).contains(r),
                let p = Self.canonicalNumber(fields[3]), (1...PasswordHash.maxP).contains(p),
                let salt = Base64URL.decode(String(fields[4])), (8...64).contains(salt.count),
                let key = Base64URL.decode(String(fields[5])), (32...64).contains(key.count)
            else { return nil }
            let parameters = ScryptParameters(n: 1 << log2N, r: r, p: p, keyLength: key.count)
            guard let memory = parameters.memoryBytes, memory <= PasswordHash.maxMemoryBytes else { return nil }
            self.parameters = parameters
            self.salt = salt
            self.key = key
        }

        /// A decimal number written without sign or leading zeros, else nil.
        private static func canonicalNumber(_ field: Substring) -> UInt64? {
            guard !field.isEmpty, field.count <= 6, field.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                field == "0" || field.first != "0"
            else { return nil }
            return UInt64(field)
        }
    }
}
