import Hashing
import Testing

/// Decodes a hex string written with optional spaces (test vectors only).
private func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
}

@Suite("FIPS 180-4 digests")
struct DigestTests {
    @Test func sha256OfEmptyAndABC() {
        #expect(Hex.encode(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hex.encode(SHA256.hash("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sha256OfNonContiguousCollection() {
        let bytes = Array("abc".utf8)
        #expect(SHA256.hash(bytes.lazy.map { $0 }) == SHA256.hash(bytes))
        #expect(SHA256.hash(bytes[1...]) == SHA256.hash("bc".utf8))
    }

    @Test func sha1OfEmptyAndABC() {
        #expect(Hex.encode(SHA1.hash([UInt8]())) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Hex.encode(SHA1.hash("abc".utf8)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    /// RFC 6455 §1.3: the sample handshake's accept key.
    @Test func webSocketAcceptKey() {
        let input = "dGhlIHNhbXBsZSBub25jZQ==" + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        #expect(Base64.encode(SHA1.hash(input.utf8)) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}

@Suite("RFC 4231 HMAC-SHA-256")
struct HMACTests {
    @Test func testCase1() {
        let tag = HMACSHA256.authenticationCode(key: [UInt8](repeating: 0x0B, count: 20), message: "Hi There".utf8)
        #expect(Hex.encode(tag) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func testCase2() {
        let tag = HMACSHA256.authenticationCode(key: Array("Jefe".utf8), message: "what do ya want for nothing?".utf8)
        #expect(Hex.encode(tag) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func emptyKeyAndMessage() {
        // HMAC-SHA-256("", "") — a common cross-implementation vector.
        let tag = HMACSHA256.authenticationCode(key: [], message: [UInt8]())
        #expect(Hex.encode(tag) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }
}

@Suite("RFC 7914 scrypt")
struct ScryptTests {
    @Test func vector1EmptyPasswordAndSalt() {
        let key = Scrypt.derive(password: [UInt8](), salt: [], parameters: ScryptParameters(n: 16, r: 1, p: 1, keyLength: 64))
        #expect(
            key
                == hex(
                    """
                    77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97 f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42 \
                    fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17 e8 d3 e0 fb 2e 0d 36 28 cf 35 e2 0c 38 d1 89 06
                    """))
    }

    @Test func vector2PasswordNaCl() {
        let key = Scrypt.derive(
            password: "password".utf8, salt: Array("NaCl".utf8), parameters: ScryptParameters(n: 1024, r: 8, p: 16, keyLength: 64))
        #expect(
            key
                == hex(
                    """
                    fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62 \
                    2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40
                    """))
    }

    @Test func interactiveParametersFitMaxmem() {
        // N = 2^15, r = 8 needs just over OpenSSL's default 32 MiB limit; derive must raise it.
        let key = Scrypt.derive(password: "pw".utf8, salt: [1, 2, 3], parameters: .interactive)
        #expect(key.count == 32)
    }
}

@Suite("RFC 4648 base64, base64url and hex")
struct EncodingTests {
    /// RFC 4648 §10 test vectors.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test func standardVectors() {
        for (plain, encoded) in Self.vectors {
            #expect(Base64.encode(plain.utf8) == encoded)
            #expect(Base64.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test func urlVectorsAreUnpadded() {
        for (plain, encoded) in Self.vectors {
            let unpadded = String(encoded.filter { $0 != "=" })
            #expect(Base64URL.encode(plain.utf8) == unpadded)
            #expect(Base64URL.decode(unpadded) == Array(plain.utf8))
        }
    }

    @Test func alphabetsDiffer() {
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    @Test func roundTripsEveryLength() {
        for length in 0...70 {
            let bytes = SecureRandom.bytes(length)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        let all = (0...255).map { UInt8($0) }
        #expect(Base64URL.decode(Base64URL.encode(all)) == all)
    }

    @Test(arguments: ["Zg==", "Zm8=", "Zg=", "Z", "Zm9vY", "Zm+v", "Zm/v", "Zm9v ", " Zm9v", "Zm\n9v", "Zh", "Zm9", "é"])
    func urlRejects(_ text: String) {
        // Padding, the standard alphabet, whitespace, a 4k+1 length, non-zero pad bits ("Zh", "Zm9"), non-ASCII.
        #expect(Base64URL.decode(text) == nil)
    }

    @Test(arguments: ["Zg", "Zg=", "Zg===", "Z===", "====", "Zm8==", "Zm-v", "Zm_v", "Zm9v\n", "Zh==", "Zm9=", "=Zm9", "Zg==Zm9v"])
    func standardRejects(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test func hexIsLowercase() {
        #expect(Hex.encode([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
        #expect(Hex.encode([UInt8]()) == "")
    }
}

@Suite("CSPRNG and constant-time comparison")
struct RandomTests {
    @Test func bytesHaveRequestedCount() {
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(32).count == 32)
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
    }

    @Test func uniformStaysInBounds() {
        for _ in 0..<1000 { #expect(SecureRandom.uniform(upperBound: 1) == 0) }
        for bound: UInt32 in [2, 3, 31, 1 << 31 + 1, .max] {
            for _ in 0..<1000 { #expect(SecureRandom.uniform(upperBound: bound) < bound) }
        }
    }

    @Test func uniformHasNoGrossBias() {
        // 30,000 draws over 3 buckets: each expects 10,000 with σ ≈ 82; ±600 is over 7σ.
        var counts = [Int](repeating: 0, count: 3)
        for _ in 0..<30_000 { counts[Int(SecureRandom.uniform(upperBound: 3))] += 1 }
        for count in counts { #expect(abs(count - 10_000) < 600, "counts \(counts)") }
        // 2^31 + 1 is the worst case for modulo bias: a naive `% bound` would put ~2/3 of draws below 2^31.
        var low = 0
        for _ in 0..<10_000 where SecureRandom.uniform(upperBound: 1 << 31 + 1) < 1 << 30 { low += 1 }
        #expect(abs(low - 5_000) < 400, "low \(low)")
    }

    @Test func constantTimeEquals() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([UInt8](), [UInt8]()))
        #expect(ConstantTime.equals("abc".utf8, [0x61, 0x62, 0x63]))
    }
}

@Suite("Password hashing")
struct PasswordHashTests {
    @Test func makeAndVerify() {
        let encoded = PasswordHash.make(password: "correct horse ✓", parameters: .testing)
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        #expect(fields.count == 6)
        #expect(fields[0] == "scrypt" && fields[1] == "10" && fields[2] == "8" && fields[3] == "1")
        #expect(Base64URL.decode(String(fields[4]))?.count == 16)
        #expect(Base64URL.decode(String(fields[5]))?.count == 32)
        #expect(PasswordHash.verify(password: "correct horse ✓", encoded: encoded))
        #expect(!PasswordHash.verify(password: "correct horse", encoded: encoded))
        #expect(!PasswordHash.verify(password: "", encoded: encoded))
    }

    @Test func saltsDiffer() {
        #expect(PasswordHash.make(password: "x", parameters: .testing) != PasswordHash.make(password: "x", parameters: .testing))
    }

    @Test func verifiesAKnownEncoding() {
        // RFC 7914 vector 2 re-expressed in our format: log2(1024) = 10, r = 8, p = 16.
        let salt = Base64URL.encode("NaCl".utf8)
        let key = Base64URL.encode(
            hex(
                """
                fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62 \
                2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40
                """))
        // "NaCl" is 4 bytes, below the 8-byte minimum salt: verify must refuse it.
        #expect(!PasswordHash.verify(password: "password", encoded: "scrypt$10$8$16$\(salt)$\(key)"))
        let salt8 = Base64URL.encode("NaClNaCl".utf8)
        let key8 = Base64URL.encode(
            Scrypt.derive(
                password: "password".utf8, salt: Array("NaClNaCl".utf8), parameters: ScryptParameters(n: 1024, r: 8, p: 16, keyLength: 64)))
        #expect(PasswordHash.verify(password: "password", encoded: "scrypt$10$8$16$\(salt8)$\(key8)"))
    }

    @Test func malformedEncodingsAreRejected() {
        let good = PasswordHash.make(password: "pw", parameters: .testing)
        let f = good.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        let bad = [
            "", "scrypt", "scrypt$10$8$1$\(f[4])", good + "$", "bcrypt$10$8$1$\(f[4])$\(f[5])",
            "scrypt$010$8$1$\(f[4])$\(f[5])", "scrypt$+10$8$1$\(f[4])$\(f[5])", "scrypt$0$8$1$\(f[4])$\(f[5])",
            "scrypt$40$8$1$\(f[4])$\(f[5])", "scrypt$10$0$1$\(f[4])$\(f[5])", "scrypt$10$8$0$\(f[4])$\(f[5])",
            "scrypt$10$999999$1$\(f[4])$\(f[5])", "scrypt$20$32$16$\(f[4])$\(f[5])",
            "scrypt$10$8$1$\(f[4])=$\(f[5])", "scrypt$10$8$1$\(f[4])$\(f[5])==", "scrypt$10$8$1$$\(f[5])",
            "scrypt$10$8$1$\(f[4])$", "scrypt$10$8$1$\(f[4])$\(f[5].dropLast(3))", "scrypt$-1$8$1$\(f[4])$\(f[5])",
        ]
        for encoded in bad { #expect(!PasswordHash.verify(password: "pw", encoded: encoded), "\(encoded)") }
        #expect(PasswordHash.verify(password: "pw", encoded: good))
    }
}
