import Foundation
import Hashing
import Testing

@Suite("RSA keys and RSASSA-PKCS1-v1_5 SHA-256 (RS256)")
struct RSATests {
    /// A fixed 2048-bit test key made with `openssl genpkey -algorithm RSA` (PKCS#8).
    static let testKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC98BBMU3MQ0BzS
        AvIEzaVa3i6CgSykv8j0fD9ZAdgUlqwEZH52FssixIJhk6171bJCLobOu6j99jWO
        Mmb450uMzhSjAxzPWCQEhEsmCQRKdTYX7l0AsobQ2nT9+mGE46rIWqpNlvXI+I9F
        sg6SO87NuqAgdwG/LxKBR53HCeuRtmQ1FS5xBZmxj8p915W1QsqTr5cmkCoWJSYJ
        qScMnZpgj7qX7bRhml3nrPPbP9DO44b+7qKyX9RLv0BVCntMkiN0jR07bUWCdSq0
        KHLWM1ffXnRYy7xRd0tDNvsA8Vhepe9FMmZhxKDzTyABP/IezaHbWGYDQj3QBMpR
        1dyTGf6rAgMBAAECggEASjXvyEKapKkLeaqY8POAdd51gZwC22PrmkqpXZdw26p7
        D0RMfMsvFyh8YK+YitfVzDHtjfyYbJG0HxjmTr3gMOWb/o0KxqCDghhGXFgNiyH8
        vqDtSYZ3Ukboiws26vshESMLg0FGSv2CzRJiyxP/GzadtdGJpy83Jbfbl5byqX1T
        DM9IR3p0BHWv5B3x39vlll/OH+kgzt/dQSMQxytUEhqAZSrjDWsa+YNUN7sl8f4y
        bOlQXS8nP16Vv31yM1HW5FSbUQHlgmpfRWFaGw55AIUqtVhNYKWq9TJAUXWG2EU9
        jPOz2Dg2aDvfUAFzHEi+rQemr5CvzkkhI2dLD8E94QKBgQDvHpmK3m0a2rpcTC7W
        iWlaXvJ7HYPCoAMLdSXFXTzNZw4ecVP0ABIZNc0Vlv/sDHPd4mCg9IKRxeA5lbhg
        hz3RDjvrSK6+g9wqh0ewOqAA2/F0VeNVCoaxL8LdrGl8acDIhZ7DM0RKw2TP52BD
        4BcKEDKtha3w1sVcMk6Za0fr8wKBgQDLWKTl/U2oddbi9/RPI7asB37RshOJCJeY
        UhXoeJwiZnmbWrIQR3oRVzZzXG4lX3pamU7ebMnClnLwxZE7nY7tD81t9UBkR4/O
        VFetbbhzW1fuxTEy+tjkMKJ386zJmlsBaki/PGCjSN3cP9tzUkpEy5V/T9D5BgkR
        lFtO16LoaQKBgQDBghXnl9Dbpp6iCtTssQ8dHzFECMKUQkG0h/0lFysZXojCghva
        niQHWs645hX9xKYPrh9cogL4TRYEA/HNzCRuhgJfidZAPx1xHUEakJbjmxpvdwId
        1ALkaS5djiVflYV5wQiWF2rwxedTiH8S7so2Tp10Z3Y4LNZSojORXIw7mQKBgG/e
        0cFx7MJsKg9uKGtNk5bq/LsyxAqUvonfRwxBJmzKgcaVS/cmy6I0n9ExnatT7sVf
        KIO3x/wUtyF9H9xzXwlOs072KTnCIPx7bE0OWvaj3ymONPX+CUro8skZNwsmr0CF
        D4aeGfBbCyu7ueik8hUNB68l4yrNRjn0q5MhkQ9ZAoGAJxiRQiH4Ilp0x2yda2Hi
        90/HdnB1Tig8dSLbszCNfHPlJdDTT1eksI3aa362kRy7U0GOA7T1zGBxVhhfra9m
        4/DuN0opPH92cotha2hp3m1F/mvAPHyfny1I48oU23i2SBmoU26Tbrkzcmg2+soR
        MGYDDqTbjIYnGHkvBCw+lYU=
        -----END PRIVATE KEY-----
        """
    /// The same key as PKCS#1 (`openssl rsa -traditional`).
    static let testKeyPKCS1PEM = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEowIBAAKCAQEAvfAQTFNzENAc0gLyBM2lWt4ugoEspL/I9Hw/WQHYFJasBGR+
        dhbLIsSCYZOte9WyQi6Gzruo/fY1jjJm+OdLjM4UowMcz1gkBIRLJgkESnU2F+5d
        ALKG0Np0/fphhOOqyFqqTZb1yPiPRbIOkjvOzbqgIHcBvy8SgUedxwnrkbZkNRUu
        cQWZsY/KfdeVtULKk6+XJpAqFiUmCaknDJ2aYI+6l+20YZpd56zz2z/QzuOG/u6i
        sl/US79AVQp7TJIjdI0dO21FgnUqtChy1jNX3150WMu8UXdLQzb7APFYXqXvRTJm
        YcSg808gAT/yHs2h21hmA0I90ATKUdXckxn+qwIDAQABAoIBAEo178hCmqSpC3mq
        mPDzgHXedYGcAttj65pKqV2XcNuqew9ETHzLLxcofGCvmIrX1cwx7Y38mGyRtB8Y
        5k694DDlm/6NCsagg4IYRlxYDYsh/L6g7UmGd1JG6IsLNur7IREjC4NBRkr9gs0S
        YssT/xs2nbXRiacvNyW325eW8ql9UwzPSEd6dAR1r+Qd8d/b5ZZfzh/pIM7f3UEj
        EMcrVBIagGUq4w1rGvmDVDe7JfH+MmzpUF0vJz9elb99cjNR1uRUm1EB5YJqX0Vh
        WhsOeQCFKrVYTWClqvUyQFF1hthFPYzzs9g4Nmg731ABcxxIvq0Hpq+Qr85JISNn
        Sw/BPeECgYEA7x6Zit5tGtq6XEwu1olpWl7yex2DwqADC3UlxV08zWcOHnFT9AAS
        GTXNFZb/7Axz3eJgoPSCkcXgOZW4YIc90Q4760iuvoPcKodHsDqgANvxdFXjVQqG
        sS/C3axpfGnAyIWewzNESsNkz+dgQ+AXChAyrYWt8NbFXDJOmWtH6/MCgYEAy1ik
        5f1NqHXW4vf0TyO2rAd+0bITiQiXmFIV6HicImZ5m1qyEEd6EVc2c1xuJV96WplO
        3mzJwpZy8MWRO52O7Q/NbfVAZEePzlRXrW24c1tX7sUxMvrY5DCid/OsyZpbAWpI
        vzxgo0jd3D/bc1JKRMuVf0/Q+QYJEZRbTtei6GkCgYEAwYIV55fQ26aeogrU7LEP
        HR8xRAjClEJBtIf9JRcrGV6IwoIb2p4kB1rOuOYV/cSmD64fXKIC+E0WBAPxzcwk
        boYCX4nWQD8dcR1BGpCW45sab3cCHdQC5GkuXY4lX5WFecEIlhdq8MXnU4h/Eu7K
        Nk6ddGd2OCzWUqIzkVyMO5kCgYBv3tHBcezCbCoPbihrTZOW6vy7MsQKlL6J30cM
        QSZsyoHGlUv3JsuiNJ/RMZ2rU+7FXyiDt8f8FLchfR/cc18JTrNO9ik5wiD8e2xN
        Dlr2o98pjjT1/glK6PLJGTcLJq9AhQ+GnhnwWwsru7nopPIVDQevJeMqzUY59KuT
        IZEPWQKBgCcYkUIh+CJadMdsnWth4vdPx3ZwdU4oPHUi27MwjXxz5SXQ009XpLCN
        2mt+tpEcu1NBjgO09cxgcVYYX62vZuPw7jdKKTx/dnKLYWtoad5tRf5rwDx8n58t
        SOPKFNt4tkgZqFNuk265M3JoNvrKETBmAw6k24yGJxh5LwQsPpWF
        -----END RSA PRIVATE KEY-----
        """
    /// Its public key (`openssl pkey -pubout`).
    static let testPublicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvfAQTFNzENAc0gLyBM2l
        Wt4ugoEspL/I9Hw/WQHYFJasBGR+dhbLIsSCYZOte9WyQi6Gzruo/fY1jjJm+OdL
        jM4UowMcz1gkBIRLJgkESnU2F+5dALKG0Np0/fphhOOqyFqqTZb1yPiPRbIOkjvO
        zbqgIHcBvy8SgUedxwnrkbZkNRUucQWZsY/KfdeVtULKk6+XJpAqFiUmCaknDJ2a
        YI+6l+20YZpd56zz2z/QzuOG/u6isl/US79AVQp7TJIjdI0dO21FgnUqtChy1jNX
        3150WMu8UXdLQzb7APFYXqXvRTJmYcSg808gAT/yHs2h21hmA0I90ATKUdXckxn+
        qwIDAQAB
        -----END PUBLIC KEY-----
        """
    static let message = "RS256 known answer: Chronir"
    /// `openssl dgst -sha256 -sign` of `message` with the test key (base64).
    static let openSSLSignature = """
        rUhFbc1iqrXko5civNbt8Re1RjuvQ13BlWTtuASvXJzIWX9mItcJyoHnwSs6LWXMU6oswZGKo3nCxWFJQAYmBelt/dz10pQj\
        gt2raIX1wtz9AAuUTWy7DlM8D1oyySzze+TK2B1HwTFxNAlnGu31xggApHiQgBN7by3PUmOjNjQ9wvlkzS3GLWtdO/7Y0/Wt\
        8htse9B1flnjwNbQFejepq38rgsgZZdl4n/R3Yfvc9qRfRIf8btgsoLZ0f8DE0NkinV0qUSnkIXdLkt9K7dz52l5iiicRZL5\
        x90mchW78H3bm352w42Ihz8MZo546HwfP3TfZDu+YjyUakcWsex+CA==
        """

    @Test("known answer: our signature is the one the openssl CLI made, byte for byte")
    func knownAnswer() throws {
        let key = try RSA.PrivateKey(pemRepresentation: Self.testKeyPEM)
        let expected = try #require(Data(base64Encoded: Self.openSSLSignature))
        #expect(key.modulusBits == 2048)
        #expect(key.signatureSHA256(for: Array(Self.message.utf8)) == Array(expected))
        let publicKey = try RSA.PublicKey(pemRepresentation: Self.testPublicKeyPEM)
        #expect(publicKey.isValidSignatureSHA256(Array(expected), for: Array(Self.message.utf8)))
        #expect(key.publicKey.pemRepresentation == Self.testPublicKeyPEM + "\n")
    }

    @Test("PKCS#1 and PKCS#8 imports are the same key; export is PKCS#8 and round-trips")
    func pemForms() throws {
        let pkcs8 = try RSA.PrivateKey(pemRepresentation: Self.testKeyPEM)
        let pkcs1 = try RSA.PrivateKey(pemRepresentation: Self.testKeyPKCS1PEM)
        #expect(pkcs1.signatureSHA256(for: Array("x".utf8)) == pkcs8.signatureSHA256(for: Array("x".utf8)))
        #expect(pkcs1.pemRepresentation == Self.testKeyPEM + "\n")
        let generated = try RSA.PrivateKey()
        let again = try RSA.PrivateKey(pemRepresentation: generated.pemRepresentation)
        #expect(again.publicKey.pemRepresentation == generated.publicKey.pemRepresentation)
        #expect(generated.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
    }

    @Test("a wrong message, a flipped bit, a short or long signature, another key: false, never a throw")
    func badSignatures() throws {
        let key = try RSA.PrivateKey(pemRepresentation: Self.testKeyPEM)
        let publicKey = key.publicKey
        let signature = key.signatureSHA256(for: Array(Self.message.utf8))
        #expect(signature.count == 256)
        #expect(!publicKey.isValidSignatureSHA256(signature, for: Array((Self.message + ".").utf8)))
        var flipped = signature
        flipped[100] ^= 0x01
        #expect(!publicKey.isValidSignatureSHA256(flipped, for: Array(Self.message.utf8)))
        #expect(!publicKey.isValidSignatureSHA256(signature.dropLast(), for: Array(Self.message.utf8)))
        #expect(!publicKey.isValidSignatureSHA256(signature + [0], for: Array(Self.message.utf8)))
        #expect(!publicKey.isValidSignatureSHA256([UInt8](), for: Array(Self.message.utf8)))
        #expect(!(try RSA.PrivateKey()).publicKey.isValidSignatureSHA256(signature, for: Array(Self.message.utf8)))
    }

    @Test("typed errors: another algorithm, a public key as private, garbage, too long, too few or too many bits")
    func refusals() throws {
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PrivateKey(pemRepresentation: P256.PrivateKey().pemRepresentation) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PrivateKey(pemRepresentation: Self.testPublicKeyPEM) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(pemRepresentation: Self.testKeyPEM) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PrivateKey(pemRepresentation: "") }
        #expect(throws: CryptoError.invalidRSAKey) {
            try RSA.PrivateKey(pemRepresentation: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        let padded = Self.testKeyPEM + "\n" + String(repeating: " ", count: RSA.maxPEMByteCount)
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PrivateKey(pemRepresentation: padded) }
        let atLimit = Self.testKeyPEM + "\n" + String(repeating: "\n", count: RSA.maxPEMByteCount - Self.testKeyPEM.utf8.count - 1)
        #expect(atLimit.utf8.count == RSA.maxPEMByteCount)
        #expect(throws: Never.self) { try RSA.PrivateKey(pemRepresentation: atLimit) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PrivateKey(bits: 2047) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PrivateKey(bits: 8193) }
    }

    @Test("seeded hostile PEM and signatures: mutated keys import or throw, mutated signatures never verify")
    func hostileInput() throws {
        var state: UInt64 = 0x5EED_4253_4132_3536
        func next() -> UInt64 {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let pem = Array(Self.testKeyPEM.utf8)
        var imported = 0
        for _ in 0..<300 {
            var mutated = pem
            for _ in 0..<(1 + Int(next() % 4)) {
                mutated[Int(next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: next())
            }
            do {
                _ = try RSA.PrivateKey(pemRepresentation: String(decoding: mutated, as: UTF8.self))
                imported += 1
            } catch {
                #expect(error == .invalidRSAKey)
            }
        }
        #expect(imported < 300, "most mutations break the key")
        let key = try RSA.PrivateKey(pemRepresentation: Self.testKeyPEM)
        let message = Array(Self.message.utf8)
        let signature = key.signatureSHA256(for: message)
        for _ in 0..<300 {
            var mutated = signature
            let index = Int(next() % UInt64(mutated.count))
            mutated[index] ^= UInt8(truncatingIfNeeded: next() | 1)
            #expect(!key.publicKey.isValidSignatureSHA256(mutated, for: message))
        }
    }
}
