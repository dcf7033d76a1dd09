import Hashing
import Testing

/// Bytes of a hex test vector (spaces allowed).
private func bytes(_ text: String) -> [UInt8] { Hex.decode(String(text.filter { $0 != " " }))! }

@Suite("RFC 5869 HKDF-SHA-256")
struct HKDFTests {
    /// RFC 5869 Appendix A.1, test case 1.
    static let ikm = [UInt8](repeating: 0x0B, count: 22)
    static let salt = bytes("000102030405060708090a0b0c")
    static let info = bytes("f0f1f2f3f4f5f6f7f8f9")
    static let prk = "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"
    static let okm = "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"

    @Test func testCase1ExtractAndExpand() throws {
        let okm = try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: Self.salt, info: Self.info, outputByteCount: 42)
        #expect(Hex.encode(okm) == Self.okm)
    }

    @Test func testCase1InTwoHalves() throws {
        let prk = HKDF.extract(inputKeyMaterial: Self.ikm, salt: Self.salt)
        #expect(Hex.encode(prk) == Self.prk)
        #expect(Hex.encode(try HKDF.expand(pseudoRandomKey: prk, info: Self.info, outputByteCount: 42)) == Self.okm)
    }

    /// RFC 5869 Appendix A.3, test case 3: empty salt and info.
    @Test func testCase3EmptySaltAndInfo() throws {
        let okm = try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: [UInt8](), info: [UInt8](), outputByteCount: 42)
        #expect(Hex.encode(okm) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func limitsAreThrownAtOneOver() throws {
        #expect(try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: Self.salt, info: Self.info, outputByteCount: 8_160).count == 8_160)
        #expect(throws: CryptoError.hkdfLimitExceeded(what: "output length", limit: 8_160, actual: 8_161)) {
            try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: Self.salt, info: Self.info, outputByteCount: 8_161)
        }
        #expect(throws: CryptoError.hkdfLimitExceeded(what: "output length", limit: 8_160, actual: 0)) {
            try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: Self.salt, info: Self.info, outputByteCount: 0)
        }
        let longest = [UInt8](repeating: 7, count: HKDF.maxInfoByteCount)
        #expect(try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: Self.salt, info: longest, outputByteCount: 16).count == 16)
        #expect(throws: CryptoError.hkdfLimitExceeded(what: "info length", limit: 1_024, actual: 1_025)) {
            try HKDF.deriveKey(inputKeyMaterial: Self.ikm, salt: Self.salt, info: longest + [0], outputByteCount: 16)
        }
        #expect(throws: CryptoError.invalidLength(what: "HKDF PRK", expected: 32, actual: 31)) {
            try HKDF.expand(pseudoRandomKey: [UInt8](repeating: 1, count: 31), info: [UInt8](), outputByteCount: 16)
        }
    }
}

@Suite("AES-128-GCM (GCM specification test cases)")
struct AESGCMTests {
    static let key3 = bytes("feffe9928665731c6d6a8f9467308308")
    static let nonce3 = bytes("cafebabefacedbaddecaf888")
    static let plaintext3 = bytes(
        """
        d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
        1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255
        """)
    static let ciphertext3 = bytes(
        """
        42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
        21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985
        """)

    /// Test case 2: zero key, zero nonce, one zero block.
    @Test func testCase2() throws {
        let sealed = try AES128GCM.seal(
            [UInt8](repeating: 0, count: 16), key: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12))
        #expect(Hex.encode(sealed) == "0388dace60b6a392f328c2b971b2fe78" + "ab6e47d42cec13bdf53a67b21257bddf")
    }

    /// Test case 3: four blocks, no associated data; and back.
    @Test func testCase3() throws {
        let sealed = try AES128GCM.seal(Self.plaintext3, key: Self.key3, nonce: Self.nonce3)
        #expect(sealed == Self.ciphertext3 + bytes("4d5c2af327cd64a62cf35abd2ba6fab4"))
        #expect(try AES128GCM.open(sealed, key: Self.key3, nonce: Self.nonce3) == Self.plaintext3)
    }

    /// Test case 4: 60 bytes with 20 bytes of associated data.
    @Test func testCase4AssociatedData() throws {
        let aad = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = try AES128GCM.seal(Self.plaintext3.prefix(60), key: Self.key3, nonce: Self.nonce3, authenticatedData: aad)
        #expect(sealed == Self.ciphertext3.prefix(60) + bytes("5bc94fbc3221a5db94fae95ae7121a47"))
        #expect(try AES128GCM.open(sealed, key: Self.key3, nonce: Self.nonce3, authenticatedData: aad) == Array(Self.plaintext3.prefix(60)))
        #expect(throws: CryptoError.authenticationFailure) {
            try AES128GCM.open(sealed, key: Self.key3, nonce: Self.nonce3, authenticatedData: aad.dropLast())
        }
    }

    @Test func emptyPlaintextIsJustATag() throws {
        let sealed = try AES128GCM.seal([UInt8](), key: Self.key3, nonce: Self.nonce3)
        #expect(sealed.count == AES128GCM.tagByteCount)
        #expect(try AES128GCM.open(sealed, key: Self.key3, nonce: Self.nonce3).isEmpty)
    }

    @Test func anyFlippedBitFailsToOpen() throws {
        let sealed = try AES128GCM.seal(Self.plaintext3, key: Self.key3, nonce: Self.nonce3)
        for index in [0, 31, sealed.count - 16, sealed.count - 1] {
            var forged = sealed
            forged[index] ^= 0x01
            #expect(throws: CryptoError.authenticationFailure) { try AES128GCM.open(forged, key: Self.key3, nonce: Self.nonce3) }
        }
        var otherNonce = Self.nonce3
        otherNonce[11] ^= 1
        #expect(throws: CryptoError.authenticationFailure) { try AES128GCM.open(sealed, key: Self.key3, nonce: otherNonce) }
        #expect(throws: CryptoError.authenticationFailure) { try AES128GCM.open(sealed.prefix(15), key: Self.key3, nonce: Self.nonce3) }
    }

    @Test func wrongKeyOrNonceLengthIsThrown() {
        #expect(throws: CryptoError.invalidLength(what: "AES-128 key", expected: 16, actual: 32)) {
            try AES128GCM.seal([1], key: [UInt8](repeating: 0, count: 32), nonce: Self.nonce3)
        }
        #expect(throws: CryptoError.invalidLength(what: "GCM nonce", expected: 12, actual: 16)) {
            try AES128GCM.open([UInt8](repeating: 0, count: 20), key: Self.key3, nonce: [UInt8](repeating: 0, count: 16))
        }
    }
}
