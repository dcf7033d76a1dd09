import COpenSSL

/// One X.509 certificate parsed from DER (RFC 5280), for verifying the `x5c` chain of a signed
/// JWS (App Store signed data) — no TLS. Immutable after parsing, so Sendable like `EVPKey`.
public final class X509Certificate: @unchecked Sendable {
    /// Longest DER accepted: Apple's certificates are 0.6–1.1 KB; this bounds what a hostile `x5c`
    /// makes libcrypto parse.
    public static let maxDERByteCount = 16_384

    let pointer: OpaquePointer
    /// The certificate's DER bytes, as given.
    public let derRepresentation: [UInt8]

    /// Parses `der`; throws `.invalidCertificate` for anything that is not one whole certificate
    /// (trailing bytes included) or is longer than `maxDERByteCount`.
    public init(derRepresentation der: [UInt8]) throws(CryptoError) {
        guard !der.isEmpty, der.count <= Self.maxDERByteCount else { throw .invalidCertificate }
        LibCrypto.prepare()
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return certificate
        }
        guard let parsed, consumed == der.count else {
            if let parsed { X509_free(parsed) }
            ERR_clear_error()
            throw .invalidCertificate
        }
        pointer = parsed
        derRepresentation = der
    }

    deinit { X509_free(pointer) }

    /// Whether the certificate carries an extension with this dotted OID (critical or not), e.g.
    /// Apple's `1.2.840.113635.100.6.11.1` (App Store receipt signing).
    public func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// The subject public key when it is a P-256 key; nil for any other key.
    public var p256PublicKey: P256.PublicKey? {
        guard let key = X509_get0_pubkey(pointer), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &group, group.count, &groupLength) == 1,
            String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else {
            ERR_clear_error()
            return nil
        }
        var point = [UInt8](repeating: 0, count: P256.publicKeyByteCount)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &point, point.count, &length) == 1,
            length == P256.publicKeyByteCount
        else {
            ERR_clear_error()
            return nil
        }
        return try? P256.PublicKey(x963Representation: point)
    }

    /// RFC 5280 §6 path validation of `leaf` through `intermediates` (untrusted) to one of `roots`
    /// (trust anchors, which must be self-signed), with validity periods, CA basic constraints and
    /// key usage checked at `atSeconds` (seconds since the epoch) instead of now. Returns the
    /// verified chain, leaf first and the anchor last, or nil when no valid path exists.
    public static func verifiedChain(
        leaf: X509Certificate, intermediates: [X509Certificate], roots: [X509Certificate], atSeconds: Int64
    ) -> [X509Certificate]? {
        LibCrypto.prepare()
        guard let store = X509_STORE_new() else { fatalOpenSSLError("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for root in roots where X509_STORE_add_cert(store, root.pointer) != 1 { ERR_clear_error() }
        guard let untrusted = OPENSSL_sk_new_null() else { fatalOpenSSLError("OPENSSL_sk_new_null") }
        defer { OPENSSL_sk_free(untrusted) }
        for certificate in intermediates {
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.pointer)) > 0 else { fatalOpenSSLError("OPENSSL_sk_push") }
        }
        guard let context = X509_STORE_CTX_new() else { fatalOpenSSLError("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            fatalOpenSSLError("X509_STORE_CTX_init")
        }
        X509_STORE_CTX_set_time(context, 0, time_t(atSeconds))
        guard X509_verify_cert(context) == 1, let chain = X509_STORE_CTX_get0_chain(context) else {
            ERR_clear_error()
            return nil
        }
        let all = [leaf] + intermediates + roots
        var verified: [X509Certificate] = []
        for index in 0..<OPENSSL_sk_num(chain) {
            let element = OpaquePointer(OPENSSL_sk_value(chain, index))
            guard let match = all.first(where: { X509_cmp($0.pointer, element) == 0 }) else { return nil }
            verified.append(match)
        }
        return verified
    }
}
