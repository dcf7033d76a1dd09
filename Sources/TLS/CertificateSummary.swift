import COpenSSL
import Glibc

/// What an operator needs to know about a served certificate: whom it names and when it expires.
public struct CertificateSummary: Sendable, Equatable {
    /// The subject, one line (`/CN=chronir.example`).
    public let subject: String
    /// The end of validity, seconds since the Unix epoch (UTC).
    public let notAfterEpochSeconds: Int
    /// SHA-256 of the DER certificate, lowercase hex: what `openssl x509 -fingerprint -sha256` shows.
    public let sha256Fingerprint: String

    init(_ certificate: OpaquePointer) {
        var subjectText = ""
        if let name = X509_get_subject_name(certificate), let line = X509_NAME_oneline(name, nil, 0) {
            subjectText = String(cString: line)
            CRYPTO_free(line, #fileID, #line)
        }
        subject = subjectText
        var expiry = tm()
        if let notAfter = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(notAfter, &expiry) == 1 {
            notAfterEpochSeconds = timegm(&expiry)
        } else {
            notAfterEpochSeconds = 0
        }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = X509_digest(certificate, EVP_sha256(), &digest, &length)
        sha256Fingerprint = digest.prefix(Int(length)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Seconds from `nowEpochSeconds` until expiry (negative once expired).
    public func secondsUntilExpiry(nowEpochSeconds: Int) -> Int { notAfterEpochSeconds - nowEpochSeconds }
}
