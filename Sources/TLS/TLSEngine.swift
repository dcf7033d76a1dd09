import COpenSSL

/// One TLS connection, sans-I/O: an OpenSSL `SSL` over two memory BIOs. Ciphertext from the
/// socket goes in with `feed`; `read` returns plaintext (driving the handshake on the way);
/// `send` and `close` turn plaintext and the end of the stream into records; `takeOutput` hands
/// over whatever records libssl produced (handshake flights, alerts, session tickets, key
/// updates). No socket, no clock, never blocks: the caller owns I/O, deadlines and buffers.
///
/// ```
///  socket bytes ──feed──▶ [rbio] ──SSL_read──▶ plaintext ──▶ HTTP parser / WebSocket
///  socket ◀──takeOutput── [wbio] ◀──SSL_write── plaintext ◀── responses
/// ```
///
/// After every `feed`+`read`, `send` or `close`, call `takeOutput` and send what it returns.
/// Not thread-safe: one owner (a connection's loop).
public final class TLSEngine {
    /// Where the connection stands.
    public enum State: Equatable, Sendable {
        /// The handshake is not finished: plaintext cannot be sent yet.
        case handshaking
        /// Application data flows both ways.
        case open
        /// Nothing more will be read; see the reason.
        case closed(CloseReason)
    }

    /// Why the TLS stream ended.
    public enum CloseReason: Equatable, Sendable {
        /// The peer sent `close_notify`: a clean end of its data.
        case closeNotify
        /// We sent `close_notify` (`close()`).
        case closedLocally
        /// A protocol error (bad record, failed handshake, plain HTTP on the TLS port); the
        /// alert libssl queued for the peer, if any, is in `takeOutput`. The text is OpenSSL's
        /// reason, for a debug log.
        case failed(String)
    }

    /// The outcome of one `read`.
    public enum ReadResult: Equatable, Sendable {
        /// This many plaintext bytes were written to the start of the buffer; call `read` again.
        case plaintext(Int)
        /// All input fed so far is consumed: feed more ciphertext.
        case needsInput
        /// The stream ended (`state` is `.closed`); further reads return this again.
        case closed(CloseReason)
    }

    /// Largest slice handed to one `SSL_write`, so `send` produces records in bounded steps.
    static let writeSlice = 64 * 1024

    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    /// Where the connection stands.
    public private(set) var state = State.handshaking

    /// A connection playing `context`'s role. For a client, `serverName` is sent as SNI and
    /// verified against the certificate (DNS name or IP address).
    public init(context: TLSContext, serverName: String? = nil) {
        OpenSSLErrors.clear()
        guard let ssl = SSL_new(context.pointer) else { fatalTLSError("SSL_new") }
        guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else { fatalTLSError("BIO_new") }
        // An empty memory BIO reports "retry" (its default EOF value is -1), so libssl answers
        // SSL_ERROR_WANT_READ instead of a false end of stream.
        SSL_set_bio(ssl, readBIO, writeBIO)  // the SSL owns both BIOs now
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        switch context.role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            SSL_set_connect_state(ssl)
            if let serverName {
                let isAddress = serverName.contains(":") || serverName.allSatisfy { $0.isNumber || $0 == "." }
                if !isAddress { _ = copenssl_set_tlsext_host_name(ssl, serverName) }
                if isAddress {
                    _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
                } else {
                    _ = SSL_set1_host(ssl, serverName)
                }
            }
        }
    }

    deinit { SSL_free(ssl) }

    // MARK: Input

    /// Hands ciphertext from the peer to libssl (buffered; nothing is decrypted until `read`).
    /// Ignored once the stream is closed.
    public func feed(_ ciphertext: UnsafeRawBufferPointer) {
        if case .closed = state { return }
        guard !ciphertext.isEmpty else { return }
        write(toReadBIO: ciphertext)
    }

    private func write(toReadBIO bytes: UnsafeRawBufferPointer) {
        // A memory BIO grows to take everything; it fails only when out of memory.
        guard BIO_write(readBIO, bytes.baseAddress, Int32(bytes.count)) == Int32(bytes.count) else {
            fatalTLSError("BIO_write")
        }
    }

    /// Advances the handshake and decrypts into `buffer` as much as one record gives (at most
    /// `buffer.count` bytes). Call until it returns `.needsInput` or `.closed`; then `takeOutput`.
    /// A client's first call (with nothing fed) produces its ClientHello.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if case .closed(let reason) = state { return .closed(reason) }
        OpenSSLErrors.clear()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 {
            state = .open
            return .plaintext(Int(n))
        }
        let error = SSL_get_error(ssl, n)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            // WANT_WRITE cannot really happen on a memory BIO; treat it as "feed more".
            if case .handshaking = state, SSL_is_init_finished(ssl) == 1 { state = .open }
            return .needsInput
        case SSL_ERROR_ZERO_RETURN:
            state = .closed(.closeNotify)
            return .closed(.closeNotify)
        default:
            let reason = CloseReason.failed(OpenSSLErrors.take(error == SSL_ERROR_SSL ? "protocol error" : "SSL_read error \(error)"))
            state = .closed(reason)
            return .closed(reason)
        }
    }

    // MARK: Output

    /// Whether `send` can seal plaintext now: the handshake is done and we have not closed or
    /// failed (a peer's `close_notify` ends only its direction; our answer may still go out).
    public var canSend: Bool {
        switch state {
        case .open, .closed(.closeNotify): true
        case .handshaking, .closed(.closedLocally), .closed(.failed): false
        }
    }

    /// Whether the handshake is still in progress.
    public var isHandshaking: Bool { state == .handshaking }

    /// Encrypts `plaintext` into records (collected by `takeOutput`). Only while `canSend`; returns
    /// false, sending nothing, otherwise (a failure turns the state `.closed(.failed)`).
    @discardableResult
    public func send(_ plaintext: UnsafeRawBufferPointer) -> Bool {
        guard canSend else { return false }
        guard !plaintext.isEmpty else { return true }
        OpenSSLErrors.clear()
        var offset = 0
        while offset < plaintext.count {
            let slice = min(plaintext.count - offset, Self.writeSlice)
            let n = SSL_write(ssl, plaintext.baseAddress! + offset, Int32(slice))
            guard n > 0 else {
                let error = SSL_get_error(ssl, n)
                state = .closed(.failed(OpenSSLErrors.take("SSL_write error \(error)")))
                return false
            }
            offset += Int(n)
        }
        return true
    }

    /// Queues `close_notify` (collected by `takeOutput`) and ends the stream from our side. Only
    /// an open connection says goodbye; one still handshaking or already failed just stops.
    public func close() {
        switch state {
        case .open, .closed(.closeNotify):
            OpenSSLErrors.clear()
            _ = SSL_shutdown(ssl)  // 0: sent ours, the peer's not seen yet — all we wait for
            OpenSSLErrors.clear()
            state = .closed(.closedLocally)
        case .handshaking:
            state = .closed(.closedLocally)
        case .closed:
            break
        }
    }

    /// Bytes of records waiting in the write BIO.
    public var pendingOutputCount: Int { Int(BIO_ctrl_pending(writeBIO)) }

    /// Appends every record libssl produced since the last call to `records` (send them in order).
    public func takeOutput(into records: inout [UInt8]) {
        var pending = Int(BIO_ctrl_pending(writeBIO))
        guard pending > 0 else { return }
        // Read into an uninitialised array, then one contiguous append: no per-byte loop (which costs
        // ≈ 8 ms per 64 KiB in a debug build, the whole of a TLS file download's time).
        let taken = [UInt8](unsafeUninitializedCapacity: pending) { raw, initialized in
            var filled = 0
            while pending > 0 {
                let n = BIO_read(writeBIO, raw.baseAddress! + filled, Int32(pending))
                if n <= 0 { break }
                filled += Int(n)
                pending -= Int(n)
            }
            initialized = filled
        }
        records.append(contentsOf: taken)
    }

    // MARK: Facts, for logs and tests

    /// The negotiated protocol version (`"TLSv1.3"`), or nil before the handshake finishes.
    public var protocolVersion: String? {
        guard SSL_is_init_finished(ssl) == 1 else { return nil }
        return String(cString: SSL_get_version(ssl))
    }

    /// The negotiated cipher suite's OpenSSL name, or nil before the handshake finishes.
    public var cipherSuite: String? {
        guard SSL_is_init_finished(ssl) == 1, let cipher = SSL_get_current_cipher(ssl) else { return nil }
        return String(cString: SSL_CIPHER_get_name(cipher))
    }

    /// The ALPN protocol agreed (`"http/1.1"`), or nil if none was.
    public var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Whether this connection resumed a session (from a ticket).
    public var sessionReused: Bool { SSL_session_reused(ssl) == 1 }

    /// The subject of the peer's certificate (a client verifying the server), for tests.
    public var peerCertificate: CertificateSummary? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        return CertificateSummary(certificate)
    }
}

extension TLSEngine {
    /// What one `receive` produced.
    public struct Received: Equatable, Sendable {
        /// Decrypted application data, in order.
        public var plaintext: [UInt8] = []
        /// Records to send to the peer (handshake, alerts, tickets).
        public var records: [UInt8] = []
        /// The state after the input.
        public var state: State
    }

    /// Feeds `ciphertext`, reads everything it decrypts and collects the records to send: the
    /// whole sans-I/O step in one call, with its results as arrays (for tests and tools; the
    /// server's connection loop uses `feed`/`read`/`takeOutput` with its own buffers).
    public func receive(_ ciphertext: [UInt8]) -> Received {
        ciphertext.withUnsafeBytes { feed($0) }
        var result = Received(state: state)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024 + 256, alignment: 1)
        defer { scratch.deallocate() }
        loop: while true {
            switch read(into: scratch) {
            case .plaintext(let n): result.plaintext.append(contentsOf: scratch[..<n])
            case .needsInput, .closed: break loop
            }
        }
        takeOutput(into: &result.records)
        result.state = state
        return result
    }

    /// `send` for an array: the records it produced (empty unless `.open`).
    public func send(_ plaintext: [UInt8]) -> [UInt8] {
        plaintext.withUnsafeBytes { _ = send($0) }
        var records: [UInt8] = []
        takeOutput(into: &records)
        return records
    }
}
