import COpenSSL
import Glibc
import Hashing
import Synchronization

/// An OpenSSL `SSL_CTX`: the certificate, key and protocol policy every connection of one role
/// starts from. Immutable once built; share it across threads (libssl locks what it mutates —
/// the ticket keys, reference counts). A reload builds a new context and swaps it in for new
/// connections; connections made from the old one keep it alive (`SSL_new` takes a reference).
///
/// Policy (docs/operations.md#tls):
/// - TLS 1.2 and 1.3 only; TLS 1.2 suites are Mozilla's "intermediate" list minus the DHE ones
///   (ECDHE everywhere: forward secrecy on every suite without shipping DH parameters); TLS 1.3
///   keeps OpenSSL's three AEAD suites. Groups X25519, P-256, P-384. No compression.
/// - Renegotiation refused (`SSL_OP_NO_RENEGOTIATION`): a TLS 1.2 `HelloRequest`/`ClientHello` mid
///   connection gets a `no_renegotiation` warning, nothing else.
/// - ALPN: `http/1.1` only. A client offering ALPN without it gets the fatal `no_application_protocol`
///   alert (RFC 7301 §3.2); a client offering none is served HTTP/1.1.
/// - Resumption: stateless session tickets only (no server-side session cache: nothing per session
///   in memory). The ticket keys are OpenSSL's own, random per context and never written anywhere,
///   so they rotate whenever a context is rebuilt — on every reload (`SIGHUP`) and every
///   `ticketKeyLifetime` (the server rebuilds from the PEM it already holds). A ticket sealed with
///   the previous key is simply not resumed: the client does a full handshake.
/// - `SSL_MODE_RELEASE_BUFFERS`: an idle connection holds no 16 KiB read/write buffers.
public final class TLSContext: @unchecked Sendable {
    // @unchecked: the SSL_CTX is not mutated after init; libssl synchronises its own internals.

    /// Which side of the handshake connections made from this context play.
    public enum Role: Sendable, Equatable {
        case server
        /// A client that verifies the server against the given trust anchors (tests, tools).
        case client
    }

    /// Mozilla "intermediate" (v5.7) TLS 1.2 suites without DHE, in its order.
    public static let tls12Ciphers =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
        + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    /// Key-exchange groups, preferred first.
    public static let groups = "X25519:prime256v1:secp384r1"
    /// How long one set of ticket keys should seal tickets before the server rebuilds the context
    /// (and so the keys): a day, like nginx's advice for rotating `ssl_session_ticket_key` files.
    public static let ticketKeyLifetime: Duration = .seconds(24 * 3600)
    /// The one application protocol spoken: `http/1.1` (WebSocket upgrades ride on it).
    public static let applicationProtocol = "http/1.1"
    /// Largest PEM file accepted (a chain of a few certificates is a few KiB).
    public static let maxPEMBytes = 1 << 20

    let pointer: OpaquePointer
    /// Which side this context is for.
    public let role: Role
    /// The leaf certificate served (server contexts), for logs and the expiry check.
    public let certificate: CertificateSummary?

    /// A server context from a PEM chain (leaf first, then intermediates) and its unencrypted
    /// private key (PKCS#8, SEC 1 or PKCS#1 PEM).
    public init(certificateChainPEM: [UInt8], privateKeyPEM: [UInt8]) throws(TLSError) {
        LibCrypto.prepare()
        OpenSSLErrors.clear()
        guard certificateChainPEM.count <= Self.maxPEMBytes else { throw .invalidCertificate("file over 1 MiB") }
        guard privateKeyPEM.count <= Self.maxPEMBytes else { throw .invalidPrivateKey("file over 1 MiB") }
        guard let context = SSL_CTX_new(TLS_server_method()) else { fatalTLSError("SSL_CTX_new") }
        do throws(TLSError) {
            try Self.applyPolicy(context)
            let chain = try PEM.certificates(certificateChainPEM)
            guard SSL_CTX_use_certificate(context, chain[0]) == 1 else {
                chain.forEach { X509_free($0) }
                throw .invalidCertificate(OpenSSLErrors.take("SSL_CTX_use_certificate"))
            }
            certificate = CertificateSummary(chain[0])
            X509_free(chain[0])
            for intermediate in chain.dropFirst() where copenssl_ctx_add0_chain_cert(context, intermediate) != 1 {
                // add0 took ownership of those before; this one is ours to free.
                X509_free(intermediate)
                throw .invalidCertificate(OpenSSLErrors.take("SSL_CTX_add0_chain_cert"))
            }
            let key = try PEM.privateKey(privateKeyPEM)
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
                throw .keyMismatch(OpenSSLErrors.take("SSL_CTX_check_private_key"))
            }
            SSL_CTX_set_alpn_select_cb(context, selectApplicationProtocol, nil)
            // Stateless tickets only: no session cache to grow with the number of clients.
            _ = copenssl_ctx_set_session_cache_mode(context, Int(SSL_SESS_CACHE_OFF))
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        pointer = context
        role = .server
    }

    /// A client context trusting the certificates in `trustedPEM` (a test CA), offering ALPN
    /// `http/1.1`. For tests and tools; the server never dials out through this module.
    public init(clientTrusting trustedPEM: [UInt8]) throws(TLSError) {
        LibCrypto.prepare()
        OpenSSLErrors.clear()
        guard let context = SSL_CTX_new(TLS_client_method()) else { fatalTLSError("SSL_CTX_new") }
        do throws(TLSError) {
            try Self.applyPolicy(context)
            let store = SSL_CTX_get_cert_store(context)
            for anchor in try PEM.certificates(trustedPEM) {
                defer { X509_free(anchor) }
                guard X509_STORE_add_cert(store, anchor) == 1 else {
                    throw .invalidCertificate(OpenSSLErrors.take("X509_STORE_add_cert"))
                }
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            let protocols = [UInt8(Self.applicationProtocol.utf8.count)] + Array(Self.applicationProtocol.utf8)
            guard SSL_CTX_set_alpn_protos(context, protocols, UInt32(protocols.count)) == 0 else {
                throw .configuration(OpenSSLErrors.take("SSL_CTX_set_alpn_protos"))
            }
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        pointer = context
        role = .client
        certificate = nil
    }

    deinit { SSL_CTX_free(pointer) }

    private static func applyPolicy(_ context: OpaquePointer) throws(TLSError) {
        guard copenssl_ctx_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw .configuration(OpenSSLErrors.take("minimum protocol TLS 1.2"))
        }
        SSL_CTX_set_options(context, COPENSSL_SSL_OP_NO_RENEGOTIATION | COPENSSL_SSL_OP_NO_COMPRESSION)
        guard SSL_CTX_set_cipher_list(context, tls12Ciphers) == 1 else {
            throw .configuration(OpenSSLErrors.take("cipher list"))
        }
        guard copenssl_ctx_set_groups_list(context, groups) == 1 else {
            throw .configuration(OpenSSLErrors.take("groups"))
        }
        _ = copenssl_ctx_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
    }
}

/// ALPN (RFC 7301): pick `http/1.1` from the client's list, or refuse with `no_application_protocol`.
private func selectApplicationProtocol(
    _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    let wanted = Array(TLSContext.applicationProtocol.utf8)
    var index = 0
    let count = Int(offeredLength)
    // The client's list: length-prefixed byte strings, back to back.
    while index < count {
        let length = Int(offered[index])
        let start = index + 1
        guard start + length <= count else { break }
        if length == wanted.count && (0..<length).allSatisfy({ offered[start + $0] == wanted[$0] }) {
            out.pointee = offered + start
            outLength.pointee = UInt8(length)
            return SSL_TLSEXT_ERR_OK
        }
        index = start + length
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}

/// PEM parsing through memory BIOs.
enum PEM {
    /// Every certificate in `pem`, in order (at least one). The caller frees them.
    static func certificates(_ pem: [UInt8]) throws(TLSError) -> [OpaquePointer] {
        let parsed: [OpaquePointer]? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { fatalTLSError("BIO_new_mem_buf") }
            defer { BIO_free(bio) }
            var certificates: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { certificates.append(certificate) }
            // The loop ends on "no start line" at the end of the input; anything else is damage.
            let last = ERR_peek_last_error()
            if certificates.isEmpty || (last != 0 && ERR_GET_REASON(last) != PEM_R_NO_START_LINE) {
                certificates.forEach { X509_free($0) }
                return nil
            }
            ERR_clear_error()
            return certificates
        }
        guard let parsed else { throw .invalidCertificate(OpenSSLErrors.take("no PEM certificate found")) }
        return parsed
    }

    /// The private key in `pem`; an encrypted key fails (no passphrase callback). The caller frees it.
    static func privateKey(_ pem: [UInt8]) throws(TLSError) -> OpaquePointer {
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { fatalTLSError("BIO_new_mem_buf") }
            defer { BIO_free(bio) }
            // An empty passphrase callback: an encrypted key fails instead of prompting on the terminal.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else { throw .invalidPrivateKey(OpenSSLErrors.take("no PEM private key found")) }
        return key
    }
}

/// The server context new connections start from, swapped whole on a reload (`SIGHUP`) or a
/// ticket-key rotation. Connections keep the context they started with.
public final class CurrentTLSContext: Sendable {
    private let slot: Mutex<TLSContext>

    /// Starts with `context`.
    public init(_ context: TLSContext) { slot = Mutex(context) }

    /// The context for a connection accepted now.
    public var context: TLSContext { slot.withLock { $0 } }

    /// Makes `context` the one new connections get; returns the one it replaced.
    @discardableResult
    public func replace(with context: TLSContext) -> TLSContext {
        slot.withLock { current in
            defer { current = context }
            return current
        }
    }
}
