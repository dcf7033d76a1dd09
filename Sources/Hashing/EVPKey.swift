import COpenSSL

/// Owns one `EVP_PKEY` and frees it with the last reference.
///
/// Sendable because it is never mutated after creation: OpenSSL 3 allows a key to be used by several
/// threads at once for read-only operations (signing, verifying, deriving), which is all this module does.
final class EVPKey: @unchecked Sendable {
    /// The key; valid for this object's lifetime.
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// A P-256 `EVP_PKEY` made with `EVP_PKEY_fromdata` from the uncompressed point `publicKey` and,
    /// for a key pair, the private scalar `privateKey` (a BIGNUM); nil when OpenSSL refuses them (bad
    /// input: the error queue is cleared).
    static func fromData(publicKey: [UInt8], privateKey: OpaquePointer? = nil) -> EVPKey? {
        LibCrypto.prepare()
        guard let builder = OSSL_PARAM_BLD_new() else { fatalOpenSSLError("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the key and value pointers until OSSL_PARAM_BLD_to_param copies them, so
        // every one must outlive that call: static strings, and the point's buffer held open here.
        let params: UnsafeMutablePointer<OSSL_PARAM>? = publicKey.withUnsafeBufferPointer { point in
            guard
                OSSL_PARAM_BLD_push_utf8_string(builder, OSSLParam.cString("group"), OSSLParam.cString("prime256v1"), 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(builder, OSSLParam.cString("pub"), point.baseAddress, point.count) == 1,
                privateKey.map({ OSSL_PARAM_BLD_push_BN(builder, OSSLParam.cString("priv"), $0) == 1 }) ?? true
            else { fatalOpenSSLError("OSSL_PARAM_BLD_push") }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params else { fatalOpenSSLError("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { fatalOpenSSLError("EVP_PKEY_CTX_new_from_name(EC)") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else { fatalOpenSSLError("EVP_PKEY_fromdata_init") }
        let selection = privateKey == nil ? COPENSSL_EVP_PKEY_PUBLIC_KEY : COPENSSL_EVP_PKEY_KEYPAIR
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata(context, &key, selection, params) == 1, let key else {
            ERR_clear_error()
            return nil
        }
        return EVPKey(key)
    }
}
