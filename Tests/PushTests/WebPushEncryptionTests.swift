import Hashing
import Push
import Testing

@Suite("RFC 8291 Web Push message encryption")
struct WebPushEncryptionTests {
    @Test func appendixAEncryptsByteForByte() throws {
        let serverKey = try P256.PrivateKey(rawRepresentation: RFC8291.applicationServerPrivate)
        #expect(serverKey.publicKey.x963Representation == RFC8291.applicationServerPublic)
        let message = try WebPushEncryption.encrypt(
            RFC8291.plaintext, userAgentPublicKey: P256.PublicKey(x963Representation: RFC8291.userAgentPublic),
            authSecret: RFC8291.authSecret, ephemeralKey: serverKey, salt: RFC8291.salt)
        #expect(Base64URL.encode(message) == Base64URL.encode(RFC8291.message))
    }

    @Test func appendixADecrypts() throws {
        let userAgent = try P256.PrivateKey(rawRepresentation: RFC8291.userAgentPrivate)
        #expect(userAgent.publicKey.x963Representation == RFC8291.userAgentPublic)
        let plaintext = try WebPushEncryption.decrypt(RFC8291.message, userAgentKey: userAgent, authSecret: RFC8291.authSecret)
        #expect(plaintext == RFC8291.plaintext)
    }

    @Test func roundTripWithFreshKeysHasTheRFCHeader() throws {
        let userAgent = P256.PrivateKey()
        let auth = SecureRandom.bytes(16)
        let subscription = try PushSubscription(
            endpoint: PushEndpoint("https://push.example.net/p/abc"), p256dh: userAgent.publicKey, authSecret: auth)
        let plaintext = Array(#"{"type":"alarm_fired","title":"Pills"}"#.utf8)
        let first = try WebPushEncryption.encrypt(plaintext, for: subscription)
        let second = try WebPushEncryption.encrypt(plaintext, for: subscription)
        #expect(first != second)  // fresh salt and ephemeral key each time
        #expect(first.count == WebPushEncryption.headerByteCount + plaintext.count + 1 + 16)
        #expect(Array(first[16..<21]) == [0x00, 0x00, 0x10, 0x00, 65])
        #expect(try P256.PublicKey(x963Representation: first[21..<86]) != userAgent.publicKey)
        #expect(try WebPushEncryption.decrypt(first, userAgentKey: userAgent, authSecret: auth) == plaintext)
        #expect(try WebPushEncryption.decrypt(second, userAgentKey: userAgent, authSecret: auth) == plaintext)
        #expect(
            try WebPushEncryption.decrypt(WebPushEncryption.encrypt([], for: subscription), userAgentKey: userAgent, authSecret: auth) == []
        )
    }

    @Test func plaintextLimitIsExactlyWhatFitsIn4096Bytes() throws {
        #expect(WebPushEncryption.maxPlaintextByteCount == 3_993)
        let userAgent = P256.PrivateKey()
        let auth = SecureRandom.bytes(16)
        let largest = [UInt8](repeating: 0x61, count: 3_993)
        let message = try WebPushEncryption.encrypt(largest, userAgentPublicKey: userAgent.publicKey, authSecret: auth)
        #expect(message.count == 4_096)
        #expect(try WebPushEncryption.decrypt(message, userAgentKey: userAgent, authSecret: auth) == largest)
        #expect(throws: WebPushError.plaintextTooLarge(byteCount: 3_994, limit: 3_993)) {
            try WebPushEncryption.encrypt(largest + [0x61], userAgentPublicKey: userAgent.publicKey, authSecret: auth)
        }
        #expect(throws: WebPushError.messageTooLarge(byteCount: 4_097, limit: 4_096)) {
            try WebPushEncryption.decrypt(message + [0], userAgentKey: userAgent, authSecret: auth)
        }
    }

    @Test func badAuthSecretOrSaltIsThrown() throws {
        let userAgent = P256.PrivateKey().publicKey
        #expect(throws: WebPushError.invalidAuthSecret) {
            try WebPushEncryption.encrypt([1], userAgentPublicKey: userAgent, authSecret: [UInt8](repeating: 1, count: 15))
        }
        #expect(throws: WebPushError.invalidSalt) {
            try WebPushEncryption.encrypt([1], userAgentPublicKey: userAgent, authSecret: RFC8291.authSecret, salt: [1, 2, 3])
        }
        #expect(throws: WebPushError.invalidAuthSecret) {
            try WebPushEncryption.decrypt(RFC8291.message, userAgentKey: P256.PrivateKey(), authSecret: [])
        }
    }

    @Test func tamperedOrMisaddressedMessagesFailToDecrypt() throws {
        let userAgent = try P256.PrivateKey(rawRepresentation: RFC8291.userAgentPrivate)
        var tampered = RFC8291.message
        tampered[tampered.count - 1] ^= 1
        #expect(throws: WebPushError.decryptionFailed) {
            try WebPushEncryption.decrypt(tampered, userAgentKey: userAgent, authSecret: RFC8291.authSecret)
        }
        var otherSalt = RFC8291.message
        otherSalt[0] ^= 1
        #expect(throws: WebPushError.decryptionFailed) {
            try WebPushEncryption.decrypt(otherSalt, userAgentKey: userAgent, authSecret: RFC8291.authSecret)
        }
        var otherAuth = RFC8291.authSecret
        otherAuth[0] ^= 1
        #expect(throws: WebPushError.decryptionFailed) {
            try WebPushEncryption.decrypt(RFC8291.message, userAgentKey: userAgent, authSecret: otherAuth)
        }
        #expect(throws: WebPushError.decryptionFailed) {
            try WebPushEncryption.decrypt(RFC8291.message, userAgentKey: P256.PrivateKey(), authSecret: RFC8291.authSecret)
        }
    }

    @Test func malformedHeadersAreThrown() throws {
        let userAgent = try P256.PrivateKey(rawRepresentation: RFC8291.userAgentPrivate)
        func decrypt(_ message: [UInt8]) throws(WebPushError) -> [UInt8] {
            try WebPushEncryption.decrypt(message, userAgentKey: userAgent, authSecret: RFC8291.authSecret)
        }
        #expect(throws: WebPushError.malformedHeader) { try decrypt(Array(RFC8291.message.prefix(85))) }
        var idlen = RFC8291.message
        idlen[20] = 64
        #expect(throws: WebPushError.malformedHeader) { try decrypt(idlen) }
        var offCurve = RFC8291.message
        offCurve[85] ^= 1
        #expect(throws: WebPushError.malformedHeader) { try decrypt(offCurve) }
        var tinyRecordSize = RFC8291.message
        tinyRecordSize[16...19] = [0, 0, 0, 17]
        #expect(throws: WebPushError.malformedHeader) { try decrypt(tinyRecordSize) }
        // The example's record is 58 bytes: a record size of 57 means a second record follows.
        var twoRecords = RFC8291.message
        twoRecords[16...19] = [0, 0, 0, 57]
        #expect(throws: WebPushError.multipleRecords) { try decrypt(twoRecords) }
        twoRecords[19] = 58
        #expect(try decrypt(twoRecords) == RFC8291.plaintext)
    }

    /// Records sealed here with the RFC 8291 key schedule written out from Hashing's primitives (an
    /// independent second implementation), carrying padding `encrypt` never produces.
    @Test func paddingRules() throws {
        let userAgent = try P256.PrivateKey(rawRepresentation: RFC8291.userAgentPrivate)
        func message(record: [UInt8]) throws -> [UInt8] {
            let server = try P256.PrivateKey(rawRepresentation: RFC8291.applicationServerPrivate)
            let keyInfo = Array("WebPush: info".utf8) + [0] + RFC8291.userAgentPublic + RFC8291.applicationServerPublic
            let ikm = try HKDF.deriveKey(
                inputKeyMaterial: server.sharedSecret(with: userAgent.publicKey), salt: RFC8291.authSecret, info: keyInfo,
                outputByteCount: 32)
            let prk = HKDF.extract(inputKeyMaterial: ikm, salt: RFC8291.salt)
            let key = try HKDF.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
            let nonce = try HKDF.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
            return Array(RFC8291.message.prefix(86)) + (try AES128GCM.seal(record, key: key, nonce: nonce))
        }
        func decrypt(_ message: [UInt8]) throws(WebPushError) -> [UInt8] {
            try WebPushEncryption.decrypt(message, userAgentKey: userAgent, authSecret: RFC8291.authSecret)
        }
        #expect(try message(record: RFC8291.plaintext + [2]) == RFC8291.message)
        #expect(try decrypt(message(record: [0x41, 0x02, 0, 0, 0])) == [0x41])
        #expect(try decrypt(message(record: [0x02, 0x00])) == [])
        #expect(try decrypt(message(record: [0x02, 0x02])) == [0x02])
        #expect(throws: WebPushError.invalidPadding) { try decrypt(try message(record: [0x41, 0x01])) }
        #expect(throws: WebPushError.invalidPadding) { try decrypt(try message(record: [0x41, 0x01, 0x00])) }
        #expect(throws: WebPushError.invalidPadding) { try decrypt(try message(record: [0, 0, 0])) }
        #expect(throws: WebPushError.invalidPadding) { try decrypt(try message(record: [])) }
    }
}
