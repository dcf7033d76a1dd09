import Foundation
import Hashing
import Testing

@testable import Identity

/// App Store signed-data verification (docs/subscriptions.md#verification): Apple's own vectors, and
/// chains minted here with Apple's OIDs for every refusal the verifier must make.
@Suite("App Store JWS — x5c chain to a pinned root, Apple's OIDs, ES256, app and environment")
struct AppStoreVerifierTests {
    static func transaction(signedDate: Int64, _ extra: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "transactionId": "2000000001", "originalTransactionId": "2000000000", "bundleId": "com.chronir.app",
            "productId": "com.chronir.plus.monthly", "environment": "Sandbox", "signedDate": signedDate,
            "purchaseDate": signedDate - 1000, "expiresDate": signedDate + 30 * 86_400_000, "type": "Auto-Renewable Subscription",
        ]
        for (key, value) in extra { claims[key] = value }
        return claims
    }

    static func verifier(_ chain: AppStoreTestChain, environment: AppStoreVerifier.Environment = .sandbox) -> AppStoreVerifier {
        AppStoreVerifier(roots: [chain.root], bundleID: "com.chronir.app", environment: environment, appAppleID: 1234)
    }

    @Test("the built-in root is Apple Root CA - G3 (its published SHA-256 fingerprint)")
    func builtInRoot() {
        let der = AppStoreVerifier.appleRootCAG3.derRepresentation
        #expect(Hex.encode(SHA256.hash(der)) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
    }

    @Test("Apple's X.509 vectors: its real App Store chain verifies to G3; its test chain with and without the OIDs")
    func appleChainVectors() throws {
        func cert(_ base64: String) throws -> X509Certificate { try X509Certificate(derRepresentation: #require(Base64.decode(base64))) }
        let real = X509Certificate.verifiedChain(
            leaf: try cert(AppleTestVectors.realAppleSigningCertificate), intermediates: [try cert(AppleTestVectors.realAppleIntermediate)],
            roots: [AppStoreVerifier.appleRootCAG3], atSeconds: AppleTestVectors.effectiveDate)
        #expect(real?.count == 3)
        #expect(try cert(AppleTestVectors.realAppleSigningCertificate).hasExtension(oid: AppStoreVerifier.leafOID))
        #expect(try cert(AppleTestVectors.realAppleIntermediate).hasExtension(oid: AppStoreVerifier.intermediateOID))
        #expect(try cert(AppleTestVectors.realAppleSigningCertificate).p256PublicKey != nil)
        // Another root does not anchor Apple's chain.
        let wrongRoot = X509Certificate.verifiedChain(
            leaf: try cert(AppleTestVectors.realAppleSigningCertificate), intermediates: [try cert(AppleTestVectors.realAppleIntermediate)],
            roots: [try cert(AppleTestVectors.rootCa)], atSeconds: AppleTestVectors.effectiveDate)
        #expect(wrongRoot == nil)
        // The library's test chain: valid, and its OID-less variants lack exactly the OID they should.
        let test = X509Certificate.verifiedChain(
            leaf: try cert(AppleTestVectors.leafCert), intermediates: [try cert(AppleTestVectors.intermediateCa)],
            roots: [try cert(AppleTestVectors.rootCa)], atSeconds: AppleTestVectors.effectiveDate)
        #expect(test?.count == 3)
        #expect(try !cert(AppleTestVectors.intermediateCaInvalidOid).hasExtension(oid: AppStoreVerifier.intermediateOID))
        #expect(try !cert(AppleTestVectors.leafCertInvalidOid).hasExtension(oid: AppStoreVerifier.leafOID))
        #expect(try cert(AppleTestVectors.leafCert).hasExtension(oid: AppStoreVerifier.leafOID))
    }

    @Test("Apple's signed-data vectors: its transaction and TEST notification verify; wrong environment and bundle refused")
    func appleSignedDataVectors() throws {
        let root = try X509Certificate(derRepresentation: #require(Base64.decode(AppleTestVectors.testCA)))
        let sandbox = AppStoreVerifier(roots: [root], bundleID: "com.example", environment: .sandbox, appAppleID: 1234)
        let claims = try sandbox.verifiedClaims(AppleTestVectors.transactionInfo)
        #expect(claims["bundleId"]?.string == "com.example")
        let notification = try sandbox.verifyNotification(AppleTestVectors.testNotification).get()
        #expect(notification.type == "TEST")
        #expect(notification.uuid == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        let production = AppStoreVerifier(roots: [root], bundleID: "com.example", environment: .production, appAppleID: 1234)
        #expect(throws: AppStoreVerificationError.wrongEnvironment) {
            try production.verifyNotification(AppleTestVectors.testNotification).get()
        }
        let other = AppStoreVerifier(roots: [root], bundleID: "com.example.other", environment: .sandbox, appAppleID: 1234)
        #expect(throws: AppStoreVerificationError.wrongBundle) { try other.verifyNotification(AppleTestVectors.testNotification).get() }
        let otherApp = AppStoreVerifier(roots: [root], bundleID: "com.example", environment: .sandbox, appAppleID: 99)
        #expect(throws: AppStoreVerificationError.wrongAppAppleID) {
            try otherApp.verifyNotification(AppleTestVectors.testNotification).get()
        }
        // Apple's data does not verify against Apple's real root.
        let g3 = AppStoreVerifier(roots: [AppStoreVerifier.appleRootCAG3], bundleID: "com.example", environment: .sandbox, appAppleID: 1234)
        #expect(throws: AppStoreVerificationError.untrustedChain) { try g3.verifiedClaims(AppleTestVectors.transactionInfo) }
    }

    @Test("a transaction signed by a minted chain with Apple's OIDs verifies and decodes")
    func mintedChain() throws {
        let chain = try AppStoreTestChain()
        let jws = chain.sign(Self.transaction(signedDate: chain.signedDate, ["appAccountToken": "0F3C2B1A-0000-4000-8000-000000000001"]))
        let transaction = try Self.verifier(chain).verifyTransaction(jws).get()
        #expect(transaction.originalTransactionID == "2000000000")
        #expect(transaction.productID == "com.chronir.plus.monthly")
        #expect(transaction.expiresDate == chain.signedDate + 30 * 86_400_000)
        #expect(transaction.appAccountToken == "0f3c2b1a-0000-4000-8000-000000000001")
    }

    @Test("every refusal: root, OIDs, expiry at signedDate, chain length, alg, key, tampering, bundle, environment")
    func refusals() throws {
        let chain = try AppStoreTestChain()
        let verifier = Self.verifier(chain)
        func refused(_ jws: String, _ expected: AppStoreVerificationError, using v: AppStoreVerifier? = nil) {
            #expect(throws: expected) { try (v ?? verifier).verifyTransaction(jws).get() }
        }
        // A chain to another root.
        let stranger = try AppStoreTestChain(rootName: "Stranger Root")
        refused(stranger.sign(Self.transaction(signedDate: chain.signedDate)), .untrustedChain)
        // The x5c's own root is never trusted: a stranger's chain that names our root as its third certificate.
        refused(
            stranger.sign(
                Self.transaction(signedDate: chain.signedDate), x5c: [stranger.leafDER, stranger.intermediateDER, chain.rootDER]),
            .untrustedChain)
        // Missing OIDs.
        let noIntermediateOID = try AppStoreTestChain(intermediateOID: false)
        refused(
            noIntermediateOID.sign(Self.transaction(signedDate: chain.signedDate)), .missingIntermediateOID,
            using: Self.verifier(noIntermediateOID))
        let noLeafOID = try AppStoreTestChain(leafOID: false)
        refused(noLeafOID.sign(Self.transaction(signedDate: chain.signedDate)), .missingLeafOID, using: Self.verifier(noLeafOID))
        // A leaf valid for one day from now, checked at a signedDate a week ahead: expired at signedDate.
        let shortLived = try AppStoreTestChain(leafDays: 1)
        let later = Int64(Date().timeIntervalSince1970 * 1000) + 7 * 86_400_000
        refused(
            shortLived.sign(Self.transaction(signedDate: chain.signedDate, ["signedDate": later])), .untrustedChain,
            using: Self.verifier(shortLived))
        // …and a signedDate before the leaf existed.
        refused(
            shortLived.sign(Self.transaction(signedDate: chain.signedDate, ["signedDate": 946_684_800_000])), .untrustedChain,
            using: Self.verifier(shortLived))
        // Two certificates, or none.
        refused(
            chain.sign(Self.transaction(signedDate: chain.signedDate), x5c: [chain.leafDER, chain.intermediateDER]), .invalidChainLength)
        refused(chain.sign(Self.transaction(signedDate: chain.signedDate), x5c: []), .invalidChainLength)
        // The leaf signed by the root directly (intermediate left out, root twice).
        refused(
            chain.sign(Self.transaction(signedDate: chain.signedDate), x5c: [chain.leafDER, chain.rootDER, chain.rootDER]), .untrustedChain)
        // alg none, HS256.
        refused(chain.sign(Self.transaction(signedDate: chain.signedDate), alg: "none"), .unsupportedAlgorithm)
        refused(chain.sign(Self.transaction(signedDate: chain.signedDate), alg: "HS256"), .unsupportedAlgorithm)
        // ES256 by another key than the leaf's.
        refused(chain.sign(Self.transaction(signedDate: chain.signedDate), key: P256.PrivateKey()), .badSignature)
        // A tampered payload under the original signature.
        let good = chain.sign(Self.transaction(signedDate: chain.signedDate))
        let parts = good.split(separator: ".").map(String.init)
        let forged = try JSONSerialization.data(
            withJSONObject: Self.transaction(signedDate: chain.signedDate, ["productId": "com.chronir.premium.annual"]),
            options: [.sortedKeys])
        refused(parts[0] + "." + Base64URL.encode(Array(forged)) + "." + parts[2], .badSignature)
        // Garbage.
        refused("not a jws", .malformed)
        refused(String(repeating: "a", count: AppStoreVerifier.maxJWSBytes + 1), .malformed)
        // Wrong app, wrong environment.
        refused(chain.sign(Self.transaction(signedDate: chain.signedDate, ["bundleId": "com.other.app"])), .wrongBundle)
        refused(chain.sign(Self.transaction(signedDate: chain.signedDate, ["environment": "Production"])), .wrongEnvironment)
        refused(
            chain.sign(Self.transaction(signedDate: chain.signedDate)), .wrongEnvironment,
            using: Self.verifier(chain, environment: .production))
    }
}
