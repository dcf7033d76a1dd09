import COpenSSL

extension P256.PrivateKey {
    /// ECDH (SP 800-56A, SEC 1 §3.3.1): the 32-byte x-coordinate of d·Q for the peer's public key Q.
    /// Both keys are valid by construction, so this cannot fail on input.
    public func sharedSecret(with peer: P256.PublicKey) -> [UInt8] {
        LibCrypto.prepare()
        guard let context = EVP_PKEY_CTX_new(key.pointer, nil) else { fatalOpenSSLError("EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer.key.pointer) == 1 else {
            fatalOpenSSLError("EVP_PKEY_derive_set_peer")
        }
        var length = P256.scalarByteCount
        var secret = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_derive(context, &secret, &length) == 1, length == P256.scalarByteCount else {
            fatalOpenSSLError("EVP_PKEY_derive(ECDH)")
        }
        return secret
    }
}
