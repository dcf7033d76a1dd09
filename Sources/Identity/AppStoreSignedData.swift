public import Hashing

/// Verifies App Store signed data — StoreKit 2 transactions and renewal infos, App Store Server
/// Notifications V2 — as Apple's App Store Server Library does (`SignedDataVerifier`): a JWS in
/// compact serialisation (RFC 7515 §7.1) whose header carries `alg: ES256` and an `x5c` of exactly
/// three certificates (leaf, intermediate, root). The leaf and intermediate must chain (RFC 5280, at
/// the payload's `signedDate`) to one of the pinned `roots` — never to the `x5c` root itself — the
/// intermediate must carry Apple's OID 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1,
/// and the signature must verify under the leaf's P-256 key. Then the payload's `bundleId`,
/// `environment` and (when configured) `appAppleId` must be this app's. Sans-I/O: text and the
/// configuration in, a decoded payload or an `AppStoreVerificationError` out.
///
/// Unlike Apple's library, `Xcode` and `LocalTesting` data are verified too (against the root the
/// operator pins with `--appstore-root-ca`, Xcode's StoreKit testing certificate): nothing unverified
/// ever changes a tier. No OCSP (Apple's library does none offline either).
public struct AppStoreVerifier: Sendable {
    /// The App Store environment a payload names (`environment`).
    public enum Environment: String, Sendable, CaseIterable {
        case production = "Production"
        case sandbox = "Sandbox"
        case xcode = "Xcode"
        case localTesting = "LocalTesting"
    }

    /// Extension OID Apple's WWDR intermediate carries (Apple Worldwide Developer Relations).
    public static let intermediateOID = "1.2.840.113635.100.6.2.1"
    /// Extension OID the App Store receipt-signing leaf carries.
    public static let leafOID = "1.2.840.113635.100.6.11.1"
    /// Longest JWS accepted: a notification carries a transaction and a renewal info, each with its
    /// own three-certificate `x5c` (≈ 4 KB each); 64 KiB bounds the work a hostile body causes.
    public static let maxJWSBytes = 64 * 1024

    /// Apple Root CA - G3 (DER, base64), the anchor of every App Store signature; SHA-256 fingerprint
    /// 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79
    /// (https://www.apple.com/certificateauthority/).
    public static let appleRootCAG3Base64 = """
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZS\
        BDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMw\
        MTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQ\
        YDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWm\
        BSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFL\
        uw3qFYM4iapIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY\
        2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM6B\
        gD56KyKA==
        """

    /// Apple Root CA - G3, parsed.
    public static var appleRootCAG3: X509Certificate {
        // The constant above is a valid certificate (AppStoreVerifierTests checks its fingerprint).
        try! X509Certificate(derRepresentation: Base64.decode(appleRootCAG3Base64)!)
    }

    /// Trust anchors: Apple Root CA - G3 unless the operator pinned another (`--appstore-root-ca`).
    public var roots: [X509Certificate]
    /// The app's bundle id (`--appstore-bundle-id`): `bundleId` must equal it.
    public var bundleID: String
    /// The environment accepted (`--appstore-environment`).
    public var environment: Environment
    /// The app's Apple id (`--appstore-app-apple-id`): when set, `appAppleId` of a notification must equal it.
    public var appAppleID: Int64?

    public init(roots: [X509Certificate], bundleID: String, environment: Environment, appAppleID: Int64?) {
        self.roots = roots
        self.bundleID = bundleID
        self.environment = environment
        self.appAppleID = appAppleID
    }

    /// A StoreKit 2 transaction (`Transaction.jwsRepresentation`, `signedTransactionInfo`).
    public func verifyTransaction(_ jws: String) -> Result<AppStoreTransaction, AppStoreVerificationError> {
        Result { () throws(AppStoreVerificationError) in
            let claims = try verifiedClaims(jws)
            guard let transaction = AppStoreTransaction(claims) else { throw .malformed }
            try checkApp(bundleID: transaction.bundleID, appAppleID: nil, environment: transaction.environment)
            return transaction
        }
    }

    /// A subscription's renewal info (`signedRenewalInfo`).
    public func verifyRenewalInfo(_ jws: String) -> Result<AppStoreRenewalInfo, AppStoreVerificationError> {
        Result { () throws(AppStoreVerificationError) in
            let claims = try verifiedClaims(jws)
            guard let info = AppStoreRenewalInfo(claims) else { throw .malformed }
            guard info.environment == environment.rawValue else { throw .wrongEnvironment }
            return info
        }
    }

    /// An App Store Server Notification V2 (`signedPayload`); its `data` transaction and renewal info
    /// are verified the same way and must name the same app.
    public func verifyNotification(_ jws: String) -> Result<AppStoreNotification, AppStoreVerificationError> {
        Result { () throws(AppStoreVerificationError) in
            let claims = try verifiedClaims(jws)
            guard let type = claims["notificationType"]?.string, let uuid = claims["notificationUUID"]?.string, !uuid.isEmpty,
                let signedDate = IDTokenVerifier.milliseconds(claims["signedDate"])
            else { throw .malformed }
            var notification = AppStoreNotification(
                type: type, subtype: claims["subtype"]?.string, uuid: uuid, signedDate: signedDate)
            // Apple's library takes the app from data, else summary, else appData.
            guard case .object(let data)? = claims["data"] ?? claims["summary"] ?? claims["appData"] else { throw .malformed }
            try checkApp(
                bundleID: data["bundleId"]?.string, appAppleID: IDTokenVerifier.milliseconds(data["appAppleId"]),
                environment: data["environment"]?.string, isNotification: true)
            if let signed = data["signedTransactionInfo"]?.string {
                notification.transaction = try verifyTransaction(signed).get()
            }
            if let signed = data["signedRenewalInfo"]?.string {
                notification.renewalInfo = try verifyRenewalInfo(signed).get()
            }
            return notification
        }
    }

    /// `appAppleID` is checked only for a notification (`isNotification`): a transaction has none.
    private func checkApp(bundleID: String?, appAppleID: Int64?, environment: String?, isNotification: Bool = false)
        throws(AppStoreVerificationError)
    {
        guard bundleID == self.bundleID else { throw .wrongBundle }
        if isNotification, let expected = self.appAppleID, appAppleID != expected { throw .wrongAppAppleID }
        guard environment == self.environment.rawValue else { throw .wrongEnvironment }
    }

    /// The claims of `jws` after the header, chain and signature checks, in Apple's order.
    func verifiedClaims(_ jws: String) throws(AppStoreVerificationError) -> [String: JSONValue] {
        guard jws.utf8.count <= Self.maxJWSBytes else { throw .malformed }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])), let header = JSONValue.object(headerBytes),
            let claimBytes = Base64URL.decode(String(parts[1])), let claims = JSONValue.object(claimBytes),
            let signature = Base64URL.decode(String(parts[2]))
        else { throw .malformed }
        guard header["alg"]?.string == "ES256", header["crit"] == nil else { throw .unsupportedAlgorithm }
        guard case .array(let x5c)? = header["x5c"] else { throw .invalidChainLength }
        guard x5c.count == 3 else { throw .invalidChainLength }
        var certificates: [X509Certificate] = []
        for entry in x5c.prefix(2) {
            guard let text = entry.string, let der = Base64.decode(text),
                let certificate = try? X509Certificate(derRepresentation: der)
            else { throw .invalidCertificate }
            certificates.append(certificate)
        }
        // Validity at signedDate (receiptCreationDate for an app transaction), as Apple's library without online checks.
        guard let signedDate = IDTokenVerifier.milliseconds(claims["signedDate"] ?? claims["receiptCreationDate"]) else {
            throw .malformed
        }
        guard
            let chain = X509Certificate.verifiedChain(
                leaf: certificates[0], intermediates: [certificates[1]], roots: roots, atSeconds: signedDate / 1000),
            chain.count == 3, chain[1] === certificates[1]
        else { throw .untrustedChain }
        guard certificates[1].hasExtension(oid: Self.intermediateOID) else { throw .missingIntermediateOID }
        guard certificates[0].hasExtension(oid: Self.leafOID) else { throw .missingLeafOID }
        guard let key = certificates[0].p256PublicKey else { throw .invalidCertificate }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard key.isValidSignature(signature, for: signingInput) else { throw .badSignature }
        return claims
    }
}

/// Why App Store signed data was refused; the raw value is the `reason` the API answers with.
public enum AppStoreVerificationError: String, Error, Sendable, Equatable {
    /// Not a three-part JWS of JSON objects, too long, or a required field missing.
    case malformed = "malformed"
    /// `alg` other than ES256 (`none` included), or a `crit` header.
    case unsupportedAlgorithm = "unsupported_algorithm"
    /// `x5c` missing or not exactly three certificates.
    case invalidChainLength = "invalid_chain_length"
    /// An `x5c` entry that is not a certificate, or a leaf key that is not P-256.
    case invalidCertificate = "invalid_certificate"
    /// Leaf and intermediate do not chain to a pinned root at `signedDate` (wrong root, expired, not a CA).
    case untrustedChain = "untrusted_chain"
    /// The intermediate lacks 1.2.840.113635.100.6.2.1.
    case missingIntermediateOID = "missing_intermediate_oid"
    /// The leaf lacks 1.2.840.113635.100.6.11.1.
    case missingLeafOID = "missing_leaf_oid"
    /// The ES256 signature does not verify under the leaf's key.
    case badSignature = "bad_signature"
    /// `bundleId` is not this app's.
    case wrongBundle = "wrong_bundle"
    /// `appAppleId` is not this app's.
    case wrongAppAppleID = "wrong_app_apple_id"
    /// `environment` is not the configured one.
    case wrongEnvironment = "wrong_environment"
}

/// The fields of a verified StoreKit 2 transaction this server uses (Apple: JWSTransactionDecodedPayload).
public struct AppStoreTransaction: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var bundleID: String
    public var productID: String
    public var environment: String
    /// Milliseconds since the epoch.
    public var purchaseDate: Int64?
    public var expiresDate: Int64?
    public var signedDate: Int64
    public var revocationDate: Int64?
    /// The UUID the app set at purchase (`appAccountToken`), lowercased.
    public var appAccountToken: String?
    /// `type`: "Auto-Renewable Subscription", "Non-Consumable", …
    public var type: String?

    init?(_ claims: [String: JSONValue]) {
        guard let transactionID = claims["transactionId"]?.string, let original = claims["originalTransactionId"]?.string,
            let bundleID = claims["bundleId"]?.string, let productID = claims["productId"]?.string,
            let environment = claims["environment"]?.string, let signedDate = IDTokenVerifier.milliseconds(claims["signedDate"]),
            !original.isEmpty
        else { return nil }
        self.transactionID = transactionID
        self.originalTransactionID = original
        self.bundleID = bundleID
        self.productID = productID
        self.environment = environment
        self.signedDate = signedDate
        purchaseDate = IDTokenVerifier.milliseconds(claims["purchaseDate"])
        expiresDate = IDTokenVerifier.milliseconds(claims["expiresDate"])
        revocationDate = IDTokenVerifier.milliseconds(claims["revocationDate"])
        appAccountToken = claims["appAccountToken"]?.string?.lowercased()
        type = claims["type"]?.string
    }
}

/// The fields of a verified renewal info this server uses (Apple: JWSRenewalInfoDecodedPayload).
public struct AppStoreRenewalInfo: Sendable, Equatable {
    public var originalTransactionID: String
    public var environment: String
    /// `autoRenewStatus` = 1.
    public var autoRenewing: Bool
    public var isInBillingRetryPeriod: Bool
    /// `gracePeriodExpiresDate`, milliseconds.
    public var gracePeriodExpiresDate: Int64?
    public var signedDate: Int64

    init?(_ claims: [String: JSONValue]) {
        guard let original = claims["originalTransactionId"]?.string, let environment = claims["environment"]?.string,
            let signedDate = IDTokenVerifier.milliseconds(claims["signedDate"])
        else { return nil }
        originalTransactionID = original
        self.environment = environment
        self.signedDate = signedDate
        autoRenewing = IDTokenVerifier.milliseconds(claims["autoRenewStatus"]) == 1
        if case .bool(let flag)? = claims["isInBillingRetryPeriod"] {
            isInBillingRetryPeriod = flag
        } else {
            isInBillingRetryPeriod = false
        }
        gracePeriodExpiresDate = IDTokenVerifier.milliseconds(claims["gracePeriodExpiresDate"])
    }
}

/// A verified App Store Server Notification V2 (Apple: ResponseBodyV2DecodedPayload).
public struct AppStoreNotification: Sendable, Equatable {
    /// `notificationType`: SUBSCRIBED, DID_RENEW, EXPIRED, REFUND, …
    public var type: String
    public var subtype: String?
    /// `notificationUUID`: the key that makes handling idempotent.
    public var uuid: String
    public var signedDate: Int64
    public var transaction: AppStoreTransaction?
    public var renewalInfo: AppStoreRenewalInfo?
}
