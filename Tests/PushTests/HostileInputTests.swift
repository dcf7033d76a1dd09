import Hashing
import Push
import TestSupport
import Testing

/// Seeded random hostile input: every result is a value or a thrown typed error, never a trap, and
/// nothing forged is accepted.
@Suite("Hostile input")
struct HostileInputTests {
    @Test func mutatedMessagesNeverDecrypt() throws {
        var random = SplitMix64(seed: 8291)
        let userAgent = try P256.PrivateKey(rawRepresentation: RFC8291.userAgentPrivate)
        for _ in 0..<2_000 {
            var message = RFC8291.message
            switch random.below(3) {
            case 0:
                // Any byte but the record size: salt, idlen, key id, ciphertext, tag.
                var index = random.below(message.count - 4)
                if index >= 16 { index += 4 }
                message[index] ^= UInt8(1 + random.below(255))
            case 1:
                message.removeLast(1 + random.below(message.count))
            default:
                message += (0...random.below(40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            #expect(throws: WebPushError.self) {
                try WebPushEncryption.decrypt(message, userAgentKey: userAgent, authSecret: RFC8291.authSecret)
            }
        }
    }

    @Test func randomEndpointsParseConsistentlyOrThrow() {
        var random = SplitMix64(seed: 8030)
        let pieces = [
            "https://", "http://", "https:", "//", "/", "?", "#", "@", ":", "[", "]", "::1", ".", "-", "a", "Z", "9", "443", "0",
            "push.example.net", "%20", " ", "é", "\u{0}", "65536", "x.y",
        ]
        var parsed = 0
        for _ in 0..<5_000 {
            let text = (0...random.below(8)).map { _ in pieces[random.below(pieces.count)] }.joined()
            guard let endpoint = try? PushEndpoint(text) else { continue }
            parsed += 1
            #expect(endpoint.origin.hasPrefix("https://") && endpoint.pathAndQuery.hasPrefix("/"), "\(text)")
            let again = try? PushEndpoint(endpoint.origin + endpoint.pathAndQuery)
            #expect(again?.origin == endpoint.origin && again?.pathAndQuery == endpoint.pathAndQuery, "\(text)")
        }
        #expect(parsed > 0)
    }

    @Test func randomPointsAreNotKeys() {
        var random = SplitMix64(seed: 256)
        for _ in 0..<500 {
            let point = [0x04] + (0..<64).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            #expect(throws: CryptoError.invalidPublicKey) { try P256.PublicKey(x963Representation: point) }
        }
    }

    @Test func mutatedPEMIsTheKeyOrRefused() throws {
        var random = SplitMix64(seed: 5958)
        let key = P256.PrivateKey()
        let pem = Array(key.pemRepresentation.utf8)
        for _ in 0..<1_000 {
            var text = pem
            text[random.below(text.count)] = UInt8(truncatingIfNeeded: 0x20 + random.below(0x5F))
            do {
                let imported = try P256.PrivateKey(pemRepresentation: String(decoding: text, as: UTF8.self))
                // A change in the base64 padding bits or an equivalent character may still decode; the
                // key it yields must then be a valid key (it signs and verifies).
                #expect(imported.publicKey.isValidSignature(imported.signature(for: [1]), for: [1]))
            } catch {
                #expect(error == .invalidPEM || error == .invalidPrivateKey)
            }
        }
    }

    @Test func randomTokensAreNotValid() {
        var random = SplitMix64(seed: 7519)
        let key = P256.PrivateKey()
        let token = Array(JWT.signES256(claims: [JWT.Claim("sub", .string("mailto:a@b"))], key: key).utf8)
        for _ in 0..<500 {
            var forged = token
            let index = random.below(forged.count)
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".utf8)
            let replacement = alphabet[random.below(alphabet.count)]
            guard replacement != forged[index] else { continue }
            forged[index] = replacement
            let text = String(decoding: forged, as: UTF8.self)
            // The last character carries 4 unused bits base64url must reject, so any change is detected.
            #expect(!JWT.hasValidES256Signature(text, publicKey: key.publicKey), "\(text)")
        }
    }
}
