import Foundation
import Hashing

/// Reads the root certificates `--appstore-root-ca` names: one DER certificate, or PEM text with one
/// or more `CERTIFICATE` blocks. Anything unreadable yields no certificate (the caller refuses to start).
enum AppStoreRootCertificates {
    static func parse(_ bytes: [UInt8]) -> [X509Certificate] {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN CERTIFICATE-----") else {
            return (try? X509Certificate(derRepresentation: bytes)).map { [$0] } ?? []
        }
        var certificates: [X509Certificate] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line == "-----BEGIN CERTIFICATE-----" {
                body = ""
            } else if line == "-----END CERTIFICATE-----", let base64 = body {
                guard let der = Base64.decode(base64), let certificate = try? X509Certificate(derRepresentation: der) else { return [] }
                certificates.append(certificate)
                body = nil
            } else if body != nil {
                body! += line
            }
        }
        return certificates
    }
}
