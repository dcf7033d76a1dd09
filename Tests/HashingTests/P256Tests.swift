import Hashing
import Testing

/// Bytes of a hex test vector.
private func bytes(_ text: String) -> [UInt8] { Hex.decode(text)! }

@Suite("P-256 keys, ECDH and ECDSA")
struct P256Tests {
    /// RFC 6979 Appendix A.2.5: the P-256 key pair.
    static let rfc6979Private = bytes("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
    static let rfc6979Public = bytes(
        "04" + "60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
            + "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299")
    /// RFC 6979 A.2.5, SHA-256, message "sample": r ‖ s.
    static let rfc6979SampleSignature = bytes(
        "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
            + "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8")
    /// The group order n.
    static let order = bytes("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

    @Test func rawImportComputesThePublicKey() throws {
        let key = try P256.PrivateKey(rawRepresentation: Self.rfc6979Private)
        #expect(key.publicKey.x963Representation == Self.rfc6979Public)
        #expect(key.rawRepresentation == Self.rfc6979Private)
    }

    @Test func verifiesRFC6979Signature() throws {
        let publicKey = try P256.PublicKey(x963Representation: Self.rfc6979Public)
        #expect(publicKey.isValidSignature(Self.rfc6979SampleSignature, for: "sample".utf8))
        #expect(!publicKey.isValidSignature(Self.rfc6979SampleSignature, for: "samplE".utf8))
        var flipped = Self.rfc6979SampleSignature
        flipped[63] ^= 1
        #expect(!publicKey.isValidSignature(flipped, for: "sample".utf8))
        #expect(!publicKey.isValidSignature(Self.rfc6979SampleSignature.dropLast(), for: "sample".utf8))
        #expect(!publicKey.isValidSignature([UInt8](repeating: 0, count: 64), for: "sample".utf8))
        #expect(!publicKey.isValidSignature([UInt8](repeating: 0xFF, count: 64), for: "sample".utf8))
    }

    @Test func signThenVerify() {
        let key = P256.PrivateKey()
        for message in ["", "sample", String(repeating: "x", count: 10_000)] {
            let signature = key.signature(for: message.utf8)
            #expect(signature.count == P256.signatureByteCount)
            #expect(key.publicKey.isValidSignature(signature, for: message.utf8))
            #expect(!P256.PrivateKey().publicKey.isValidSignature(signature, for: message.utf8))
        }
        // Random nonces: two signatures of one message differ, both verify.
        #expect(key.signature(for: [1, 2, 3]) != key.signature(for: [1, 2, 3]))
    }

    @Test func shortRAndSAreLeftPadded() {
        // About 1 in 128 signatures has r or s below 2^248; 2,000 signatures miss one with p < 1e-6.
        let key = P256.PrivateKey()
        var padded = 0
        for index in 0..<2_000 where padded == 0 {
            let signature = key.signature(for: [UInt8(index & 0xFF), UInt8(index >> 8)])
            if signature[0] == 0 || signature[32] == 0 {
                padded += 1
                #expect(signature.count == 64)
                #expect(key.publicKey.isValidSignature(signature, for: [UInt8(index & 0xFF), UInt8(index >> 8)]))
            }
        }
        #expect(padded == 1)
    }

    /// One key shared by concurrent tasks (the `Sendable` contract): every signature verifies.
    @Test func oneKeySignsFromManyThreads() async {
        let key = P256.PrivateKey()
        let results = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<25).allSatisfy { index in
                        let message = [UInt8(task), UInt8(index)]
                        let peer = P256.PrivateKey()
                        return key.publicKey.isValidSignature(key.signature(for: message), for: message)
                            && key.sharedSecret(with: peer.publicKey) == peer.sharedSecret(with: key.publicKey)
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == [Bool](repeating: true, count: 8))
    }

    @Test func ecdhAgrees() throws {
        let alice = P256.PrivateKey()
        let bob = P256.PrivateKey()
        let secret = alice.sharedSecret(with: bob.publicKey)
        #expect(secret.count == 32)
        #expect(secret == bob.sharedSecret(with: alice.publicKey))
        #expect(secret != alice.sharedSecret(with: P256.PrivateKey().publicKey))
        // A re-imported key agrees too.
        let again = try P256.PrivateKey(rawRepresentation: alice.rawRepresentation)
        #expect(again.sharedSecret(with: try P256.PublicKey(x963Representation: bob.publicKey.x963Representation)) == secret)
    }

    @Test func pemRoundTrip() throws {
        let key = P256.PrivateKey()
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let imported = try P256.PrivateKey(pemRepresentation: pem)
        #expect(imported.rawRepresentation == key.rawRepresentation)
        #expect(imported.publicKey == key.publicKey)
        #expect(key.publicKey.isValidSignature(imported.signature(for: [9]), for: [9]))
    }

    /// The RFC 6979 key as another implementation (Python's `cryptography`) writes it: PKCS#8, the
    /// form of an APNs `.p8` file, and SEC 1 ("EC PRIVATE KEY").
    @Test func importsForeignPEM() throws {
        let pkcs8 = """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgya+p2EW6dRZrXCFX
            Z7HWk05Qw9s26JsSe4piKxIPZyGhRANCAARg/tS6JVqdMclh63TGNW1owEm4kjth
            +mzmaWIuYPKftnkD/hAIuLyZpBrp6VYovGTy8bIMLX6fUXejwpTURiKZ
            -----END PRIVATE KEY-----
            """
        let key = try P256.PrivateKey(pemRepresentation: pkcs8)
        #expect(key.rawRepresentation == Self.rfc6979Private)
        #expect(key.publicKey.x963Representation == Self.rfc6979Public)
        let sec1 = """
            -----BEGIN EC PRIVATE KEY-----
            MHcCAQEEIMmvqdhFunUWa1whV2ex1pNOUMPbNuibEnuKYisSD2choAoGCCqGSM49
            AwEHoUQDQgAEYP7UuiVanTHJYet0xjVtaMBJuJI7Yfps5mliLmDyn7Z5A/4QCLi8
            maQa6elWKLxk8vGyDC1+n1F3o8KU1EYimQ==
            -----END EC PRIVATE KEY-----
            """
        #expect(try P256.PrivateKey(pemRepresentation: sec1).rawRepresentation == Self.rfc6979Private)
    }

    @Test func badPrivateKeysAreThrown() {
        for scalar in [
            [UInt8](repeating: 0, count: 32), Self.order, [UInt8](repeating: 0xFF, count: 32), [1], [UInt8](repeating: 1, count: 33),
        ] {
            #expect(throws: CryptoError.invalidPrivateKey) { try P256.PrivateKey(rawRepresentation: scalar) }
        }
        var belowOrder = Self.order
        belowOrder[31] -= 1
        #expect((try? P256.PrivateKey(rawRepresentation: belowOrder)) != nil)
        #expect((try? P256.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 31) + [1])) != nil)
    }

    @Test func badPEMIsThrown() {
        let pem = P256.PrivateKey().pemRepresentation
        let cases = [
            "", "hello", pem.replacing("PRIVATE KEY", with: "PUBLIC KEY"), String(pem.dropLast(40)),
            String(repeating: "A", count: P256.PrivateKey.maxPEMByteCount + 1),
            // The RFC 6979 key encrypted with a passphrase: refused, never prompted for.
            """
            -----BEGIN ENCRYPTED PRIVATE KEY-----
            MIH0MF8GCSqGSIb3DQEFDTBSMDEGCSqGSIb3DQEFDDAkBBBYOzcev6xIIFhJjf/5
            g2XAAgIIADAMBggqhkiG9w0CCQUAMB0GCWCGSAFlAwQBKgQQXYzuo5RIE4UQPpkf
            59d8BQSBkMb2O0vZBki5376wwJm/O7yceQmawjxqH0PZ2I1CMdTt+wY05hNsf0ol
            xCzmFZlKeEDeMpIuPEGLlTeB2+BgXJp4KFbK89uvS92mPGeSe1LGFe4ZJgDfhTVD
            LaKlWyWjL5H/XYfexODUA4a4IybwE31OzQrh1UfVhIVIFkpZOCyUYeBnR28JD80J
            YFXlyp9FKw==
            -----END ENCRYPTED PRIVATE KEY-----
            """,
            // A P-384 key: another curve.
            """
            -----BEGIN PRIVATE KEY-----
            MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDAUYotg5kZafPo0oUTM
            A1rj/M28Aao4WHlkY6LdkCIYKjshRQOTxaGjCZYfPzGPBxChZANiAASiA4N/Tx0O
            r17aYmbYbXKN9l6+BisIpty4bpgUR66Vx7MiDAqjYP40ZrNUfARcZ31NeBUMq32O
            xsaegYs//t1wwdG6XE7ztSUIQsjdKV8YbzJLCZsiWyaDANguXyiAnsQ=
            -----END PRIVATE KEY-----
            """,
            // An Ed25519 PKCS#8 key (RFC 8410 §10.3): another algorithm.
            """
            -----BEGIN PRIVATE KEY-----
            MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
            -----END PRIVATE KEY-----
            """,
        ]
        for text in cases {
            #expect(throws: CryptoError.invalidPEM) { try P256.PrivateKey(pemRepresentation: text) }
        }
    }

    @Test func badPublicKeysAreThrown() {
        var offCurve = Self.rfc6979Public
        offCurve[64] ^= 1
        var compressed = [UInt8](Self.rfc6979Public.prefix(33))
        compressed[0] = 0x03
        let cases: [[UInt8]] = [
            offCurve, compressed, Array(Self.rfc6979Public.dropLast()), Self.rfc6979Public + [0], [0x04] + [UInt8](repeating: 0, count: 64),
            [0x05] + Self.rfc6979Public.dropFirst(), [0x04] + [UInt8](repeating: 0xFF, count: 64), [],
        ]
        for point in cases {
            #expect(throws: CryptoError.invalidPublicKey) { try P256.PublicKey(x963Representation: point) }
        }
    }
}
