import COpenSSL

/// RSA public keys as a JSON Web Key carries them (RFC 7518 §6.3.1: `n` and `e`, unsigned big-endian
/// integers) — how Apple and Google publish the keys that sign their ID tokens.
extension RSA.PublicKey {
    /// Longest public exponent accepted, in bytes (real keys use 65537, three bytes; RFC 8017 allows
    /// up to the modulus, but a huge exponent only makes verifying slow).
    public static let maxExponentByteCount = 8

    /// Imports the public key (`modulus`, `exponent`). Throws `.invalidRSAKey` unless the modulus
    /// (leading zero bytes ignored) has `RSA.allowedModulusBits` bits and the exponent is odd, at least
    /// 3 and at most `maxExponentByteCount` bytes.
    public init(modulus: some Collection<UInt8>, exponent: some Collection<UInt8>) throws(CryptoError) {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        guard let highByte = n.first, let lowExponent = e.last, e.count <= Self.maxExponentByteCount,
            lowExponent & 1 == 1, e.count > 1 || lowExponent >= 3
        else { throw .invalidRSAKey }
        let bits = n.count * 8 - highByte.leadingZeroBitCount
        guard RSA.allowedModulusBits.contains(bits) else { throw .invalidRSAKey }
        LibCrypto.prepare()
        guard let nBN = BN_bin2bn(n, Int32(n.count), nil) else { fatalOpenSSLError("BN_bin2bn(n)") }
        defer { BN_free(nBN) }
        guard let eBN = BN_bin2bn(e, Int32(e.count), nil) else { fatalOpenSSLError("BN_bin2bn(e)") }
        defer { BN_free(eBN) }
        guard let builder = OSSL_PARAM_BLD_new() else { fatalOpenSSLError("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_BN(builder, OSSLParam.cString("n"), nBN) == 1,
            OSSL_PARAM_BLD_push_BN(builder, OSSLParam.cString("e"), eBN) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else { fatalOpenSSLError("OSSL_PARAM_BLD_push_BN(RSA)") }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { fatalOpenSSLError("EVP_PKEY_CTX_new_from_name(RSA)") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else { fatalOpenSSLError("EVP_PKEY_fromdata_init(RSA)") }
        var made: OpaquePointer?
        guard EVP_PKEY_fromdata(context, &made, COPENSSL_EVP_PKEY_PUBLIC_KEY, params) == 1, let made else {
            ERR_clear_error()
            throw .invalidRSAKey
        }
        self.init(key: EVPKey(made))
    }

    /// The modulus `n`, big-endian without leading zeros (a JWK's `n` before base64url).
    public var modulus: [UInt8] { component("n") }
    /// The public exponent `e`, big-endian without leading zeros (a JWK's `e`).
    public var exponent: [UInt8] { component("e") }

    private func component(_ name: StaticString) -> [UInt8] {
        LibCrypto.prepare()
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, OSSLParam.cString(name), &bn) == 1, let bn else {
            fatalOpenSSLError("EVP_PKEY_get_bn_param(\(name))")
        }
        defer { BN_free(bn) }
        var out = [UInt8](repeating: 0, count: (Int(BN_num_bits(bn)) + 7) / 8)
        guard BN_bn2bin(bn, &out) == Int32(out.count) else { fatalOpenSSLError("BN_bn2bin") }
        return out
    }
}
