/// Why a Web Push message could not be encrypted or decrypted (RFC 8291, RFC 8188).
public enum WebPushError: Error, Sendable, Equatable {
    /// The plaintext is longer than `WebPushEncryption.maxPlaintextByteCount`.
    case plaintextTooLarge(byteCount: Int, limit: Int)
    /// The authentication secret is not 16 bytes.
    case invalidAuthSecret
    /// The salt is not 16 bytes.
    case invalidSalt
    /// `decrypt`: the message is longer than `WebPushEncryption.maxMessageByteCount`.
    case messageTooLarge(byteCount: Int, limit: Int)
    /// `decrypt`: the header is cut short, its record size is below 18, or its key id is not a
    /// 65-byte P-256 point (RFC 8291 §4).
    case malformedHeader
    /// `decrypt`: the content is longer than one record (RFC 8291 §4: a push message is one record).
    case multipleRecords
    /// `decrypt`: the tag does not authenticate the record under the derived key.
    case decryptionFailed
    /// `decrypt`: the record's padding does not end in the last-record delimiter 0x02 (RFC 8188 §2).
    case invalidPadding
}
