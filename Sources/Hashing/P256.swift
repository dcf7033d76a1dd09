import COpenSSL

/// The NIST P-256 curve (prime256v1, secp256r1; FIPS 186-4) through OpenSSL 3's `EVP_PKEY` interface:
/// key pairs, ECDH (`P256+ECDH.swift`), ECDSA-SHA-256 with JOSE raw signatures (`P256+ECDSA.swift`)
/// and PKCS#8 PEM (`P256+PEM.swift`).
///
/// Contract: every key value is valid by construction — an imported private scalar is in 1..<n and
/// an imported public key is a point of the curve (not infinity), else the initialiser throws. Keys
/// are immutable and safe to share between threads.
public enum P256 {
    /// Length of a private scalar, of a coordinate and of an ECDH shared secret in bytes.
    public static let scalarByteCount = 32
    /// Length of an uncompressed point 0x04 ‖ x ‖ y (SEC 1 §2.3.3) in bytes.
    public static let publicKeyByteCount = 65
    /// OpenSSL's name of the curve.
    static let groupName = "prime256v1"

    /// A P-256 private key with its public key.
    public struct PrivateKey: Sendable {
        /// The key pair.
        let key: EVPKey
        /// The matching public key.
        public let publicKey: PublicKey

        /// Generates a fresh key pair from OpenSSL's CSPRNG.
        public init() {
            LibCrypto.prepare()
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { fatalOpenSSLError("EVP_PKEY_CTX_new_from_name(EC)") }
            defer { EVP_PKEY_CTX_free(context) }
            var generated: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, groupName) == 1,
                EVP_PKEY_generate(context, &generated) == 1, let generated
            else { fatalOpenSSLError("EVP_PKEY_generate(P-256)") }
            let key = EVPKey(generated)
            var point = [UInt8](repeating: 0, count: publicKeyByteCount)
            var length = 0
            guard EVP_PKEY_get_octet_string_param(key.pointer, "pub", &point, point.count, &length) == 1,
                length == publicKeyByteCount, point[0] == 0x04
            else { fatalOpenSSLError("EVP_PKEY_get_octet_string_param(pub)") }
            self.key = key
            self.publicKey = PublicKey(key: key, x963Representation: point)
        }

        /// Imports a private key from its 32-byte big-endian scalar d; throws `.invalidPrivateKey`
        /// unless 1 ≤ d < n. The public key d·G is computed here.
        public init(rawRepresentation: some Collection<UInt8>) throws(CryptoError) {
            let scalar = Array(rawRepresentation)
            guard scalar.count == scalarByteCount else { throw .invalidPrivateKey }
            LibCrypto.prepare()
            guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { fatalOpenSSLError("EC_GROUP_new_by_curve_name") }
            defer { EC_GROUP_free(group) }
            guard let d = BN_secure_new() else { fatalOpenSSLError("BN_secure_new") }
            defer { BN_clear_free(d) }
            guard BN_bin2bn(scalar, Int32(scalarByteCount), d) != nil else { fatalOpenSSLError("BN_bin2bn") }
            guard BN_is_zero(d) == 0, BN_cmp(d, EC_GROUP_get0_order(group)) < 0 else { throw .invalidPrivateKey }
            guard let product = EC_POINT_new(group) else { fatalOpenSSLError("EC_POINT_new") }
            defer { EC_POINT_free(product) }
            var point = [UInt8](repeating: 0, count: publicKeyByteCount)
            guard EC_POINT_mul(group, product, d, nil, nil, nil) == 1,
                EC_POINT_point2oct(group, product, POINT_CONVERSION_UNCOMPRESSED, &point, point.count, nil) == publicKeyByteCount
            else { fatalOpenSSLError("EC_POINT_mul") }
            let imported = EVPKey.fromData(publicKey: point, privateKey: d)
            // A scalar in range with its own public point is valid input: a refusal is libcrypto's.
            guard let imported else { fatalOpenSSLError("EVP_PKEY_fromdata(P-256 key pair)") }
            self.key = imported
            self.publicKey = PublicKey(key: imported, x963Representation: point)
        }

        /// The 32-byte big-endian private scalar (keep it secret).
        public var rawRepresentation: [UInt8] {
            var d: OpaquePointer?
            guard EVP_PKEY_get_bn_param(key.pointer, "priv", &d) == 1, let d else { fatalOpenSSLError("EVP_PKEY_get_bn_param(priv)") }
            defer { BN_clear_free(d) }
            var out = [UInt8](repeating: 0, count: scalarByteCount)
            guard BN_bn2binpad(d, &out, Int32(scalarByteCount)) == Int32(scalarByteCount) else { fatalOpenSSLError("BN_bn2binpad") }
            return out
        }
    }

    /// A P-256 public key: a point of the curve other than infinity.
    public struct PublicKey: Sendable, Equatable {
        /// The key (for a private key's public half, the key pair itself).
        let key: EVPKey
        /// The uncompressed point 0x04 ‖ x ‖ y (65 bytes; the form Web Push and VAPID use).
        public let x963Representation: [UInt8]

        /// Wraps a key whose uncompressed point is `x963Representation`.
        init(key: EVPKey, x963Representation: [UInt8]) {
            self.key = key
            self.x963Representation = x963Representation
        }

        /// Imports an uncompressed point; throws `.invalidPublicKey` for any other length or form
        /// (compressed points included) and for a point not on the curve.
        public init(x963Representation: some Collection<UInt8>) throws(CryptoError) {
            let point = Array(x963Representation)
            guard point.count == publicKeyByteCount, point[0] == 0x04 else { throw .invalidPublicKey }
            let imported = EVPKey.fromData(publicKey: point)
            guard let imported else { throw .invalidPublicKey }
            // fromdata decodes the point onto the curve; the full public check (SP 800-56A
            // §5.6.2.3.3: in range, on the curve, of order n) costs one scalar multiplication.
            guard let context = EVP_PKEY_CTX_new(imported.pointer, nil) else { fatalOpenSSLError("EVP_PKEY_CTX_new") }
            defer { EVP_PKEY_CTX_free(context) }
            guard EVP_PKEY_public_check(context) == 1 else {
                ERR_clear_error()
                throw .invalidPublicKey
            }
            self.key = imported
            self.x963Representation = point
        }

        /// Keys are equal when their points are.
        public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.x963Representation == rhs.x963Representation }
    }
}
