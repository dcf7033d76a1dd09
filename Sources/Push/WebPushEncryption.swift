public import Hashing

/// Message encryption for Web Push (RFC 8291) with the `aes128gcm` content coding (RFC 8188), one
/// record per message. Sans-I/O: bytes in, bytes out (the body of the POST to the endpoint, sent with
/// `Content-Encoding: aes128gcm`).
///
/// ```
/// +-----------+--------+-----------+--------------------------+---------------------------------+
/// | salt (16) | rs (4) | idlen (1) | keyid (65): the server's | record: AES-128-GCM of          |
/// |           | BE     | = 65      | ephemeral public key     | plaintext ‖ 0x02, then tag (16) |
/// +-----------+--------+-----------+--------------------------+---------------------------------+
/// ```
///
/// Keys (RFC 8291 §3.4, RFC 8188 §2.2–2.3):
/// `IKM = HKDF(salt: auth, ikm: ECDH(as, ua), info: "WebPush: info\0" ‖ ua_public ‖ as_public, 32)`,
/// `PRK = HKDF-Extract(salt, IKM)`, `CEK = HKDF-Expand(PRK, "Content-Encoding: aes128gcm\0", 16)`,
/// `NONCE = HKDF-Expand(PRK, "Content-Encoding: nonce\0", 12)` (record 0, so no XOR).
public enum WebPushEncryption {
    /// Length of the salt in bytes (RFC 8188 §2.1).
    public static let saltByteCount = 16
    /// The record size written in the header: one record always fits (RFC 8291 §4 uses 4096).
    public static let recordSize: UInt32 = 4_096
    /// Header length: salt (16) + rs (4) + idlen (1) + the 65-byte key id.
    public static let headerByteCount = saltByteCount + 4 + 1 + P256.publicKeyByteCount
    /// The largest message sent: RFC 8030 §7.2 makes push services accept payloads of at least
    /// 4,096 bytes and lets them refuse larger ones (413), so nothing larger is ever produced.
    public static let maxMessageByteCount = 4_096
    /// The largest plaintext: 4,096 − 86 (header) − 16 (tag) − 1 (delimiter) = 3,993 bytes.
    public static let maxPlaintextByteCount = maxMessageByteCount - headerByteCount - AES128GCM.tagByteCount - 1
    /// RFC 8188 §2: a record size below 18 cannot hold a tag and a delimiter.
    static let minRecordSize: UInt32 = 18
    /// RFC 8188 §2: the delimiter after the plaintext of the last record.
    static let lastRecordDelimiter: UInt8 = 0x02

    /// Encrypts `plaintext` for a subscription (see the other `encrypt`).
    public static func encrypt(_ plaintext: some Collection<UInt8>, for subscription: PushSubscription) throws(WebPushError) -> [UInt8] {
        try encrypt(plaintext, userAgentPublicKey: subscription.p256dh, authSecret: subscription.authSecret)
    }

    /// Encrypts `plaintext` (at most `maxPlaintextByteCount` bytes) for the user agent whose public key
    /// and 16-byte authentication secret are given: the whole message body. `ephemeralKey` and `salt`
    /// are fresh random values unless a test injects them; never reuse either for a second message.
    public static func encrypt(
        _ plaintext: some Collection<UInt8>, userAgentPublicKey: P256.PublicKey, authSecret: [UInt8],
        ephemeralKey: P256.PrivateKey = P256.PrivateKey(), salt: [UInt8] = SecureRandom.bytes(saltByteCount)
    ) throws(WebPushError) -> [UInt8] {
        guard plaintext.count <= maxPlaintextByteCount else {
            throw .plaintextTooLarge(byteCount: plaintext.count, limit: maxPlaintextByteCount)
        }
        guard authSecret.count == PushSubscription.authSecretByteCount else { throw .invalidAuthSecret }
        guard salt.count == saltByteCount else { throw .invalidSalt }
        let keys = ContentKeys(
            ecdhSecret: ephemeralKey.sharedSecret(with: userAgentPublicKey), authSecret: authSecret,
            userAgentPublicKey: userAgentPublicKey, applicationServerPublicKey: ephemeralKey.publicKey, salt: salt)
        var record = Array(plaintext)
        record.append(lastRecordDelimiter)
        var message = salt
        message.reserveCapacity(headerByteCount + record.count + AES128GCM.tagByteCount)
        withUnsafeBytes(of: recordSize.bigEndian) { message.append(contentsOf: $0) }
        message.append(UInt8(P256.publicKeyByteCount))
        message.append(contentsOf: ephemeralKey.publicKey.x963Representation)
        message.append(contentsOf: keys.seal(record))
        return message
    }

    /// The user agent's side: decrypts a message produced by `encrypt` (or any RFC 8291 sender using
    /// one record) with the user agent's private key and authentication secret.
    public static func decrypt(
        _ message: some Collection<UInt8>, userAgentKey: P256.PrivateKey, authSecret: [UInt8]
    ) throws(WebPushError) -> [UInt8] {
        let message = Array(message)
        guard message.count <= maxMessageByteCount else {
            throw .messageTooLarge(byteCount: message.count, limit: maxMessageByteCount)
        }
        guard authSecret.count == PushSubscription.authSecretByteCount else { throw .invalidAuthSecret }
        guard message.count >= headerByteCount else { throw .malformedHeader }
        let salt = Array(message[0..<saltByteCount])
        let recordSize = message[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard recordSize >= minRecordSize, message[20] == UInt8(P256.publicKeyByteCount),
            let applicationServerKey = try? P256.PublicKey(x963Representation: message[21..<headerByteCount])
        else { throw .malformedHeader }
        let record = message[headerByteCount...]
        guard record.count <= recordSize else { throw .multipleRecords }
        let keys = ContentKeys(
            ecdhSecret: userAgentKey.sharedSecret(with: applicationServerKey), authSecret: authSecret,
            userAgentPublicKey: userAgentKey.publicKey, applicationServerPublicKey: applicationServerKey, salt: salt)
        guard var padded = keys.open(record) else { throw .decryptionFailed }
        // RFC 8188 §2: plaintext ‖ delimiter ‖ zero or more 0x00; the last record's delimiter is 0x02.
        while padded.last == 0 { padded.removeLast() }
        guard padded.last == lastRecordDelimiter else { throw .invalidPadding }
        padded.removeLast()
        return padded
    }
}

/// The content-encryption key and nonce of one message (RFC 8291 §3.4, RFC 8188 §2.2–2.3).
private struct ContentKeys {
    /// CEK, 16 bytes.
    let key: [UInt8]
    /// NONCE, 12 bytes (the nonce of record 0).
    let nonce: [UInt8]

    init(
        ecdhSecret: [UInt8], authSecret: [UInt8], userAgentPublicKey: P256.PublicKey, applicationServerPublicKey: P256.PublicKey,
        salt: [UInt8]
    ) {
        let keyInfo =
            Array("WebPush: info".utf8) + [0] + userAgentPublicKey.x963Representation + applicationServerPublicKey.x963Representation
        // Every length here is fixed by the RFCs and within HKDF's limits, so nothing can throw.
        do {
            let ikm = try HKDF.deriveKey(inputKeyMaterial: ecdhSecret, salt: authSecret, info: keyInfo, outputByteCount: 32)
            let prk = HKDF.extract(inputKeyMaterial: ikm, salt: salt)
            key = try HKDF.expand(
                pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: AES128GCM.keyByteCount)
            nonce = try HKDF.expand(
                pseudoRandomKey: prk, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: AES128GCM.nonceByteCount)
        } catch {
            preconditionFailure("RFC 8291 key schedule: \(error)")
        }
    }

    /// Record ‖ tag.
    func seal(_ record: [UInt8]) -> [UInt8] {
        do { return try AES128GCM.seal(record, key: key, nonce: nonce) } catch { preconditionFailure("AES-128-GCM lengths: \(error)") }
    }

    /// The padded plaintext, or nil when the tag does not authenticate it.
    func open(_ sealed: ArraySlice<UInt8>) -> [UInt8]? { try? AES128GCM.open(sealed, key: key, nonce: nonce) }
}
