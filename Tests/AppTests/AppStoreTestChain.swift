import Foundation
import Hashing
import TestSupport

/// A throwaway App Store signing chain made with the `openssl` tool: a self-signed root, an
/// intermediate it signed and a leaf the intermediate signed (P-256 keys), carrying Apple's
/// extension OIDs unless told otherwise — and the JWS signer that uses it, as the App Store signs
/// transactions, renewal infos and notifications (docs/subscriptions.md#verification).
final class AppStoreTestChain: Sendable {
    let directory: TemporaryDirectory
    let rootDER: [UInt8]
    let intermediateDER: [UInt8]
    let leafDER: [UInt8]
    let leafKey: P256.PrivateKey
    /// A minute after the certificates were made (ms): a `signedDate` within every certificate's validity.
    let signedDate: Int64

    /// `intermediateOID`/`leafOID`: whether each carries Apple's OID; `leafDays`: the leaf's validity from now.
    init(intermediateOID: Bool = true, leafOID: Bool = true, leafDays: Int = 3650, rootName: String = "Test Root") throws {
        // The certificates' notBefore is when openssl runs (the wall clock: certificate validity is the one
        // thing here that must be the real date); a minute later is inside it.
        signedDate = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        directory = TemporaryDirectory(prefix: "appstore-ca")
        let file = directory.file(named:)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try ChildProcess.run(
            "openssl",
            ["req", "-x509"] + key + [
                "-keyout", file("root.key"), "-out", file("root.pem"), "-days", "3650", "-subj", "/CN=\(rootName)",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        func issue(_ name: String, by issuer: String, days: Int, extensions: [String]) throws {
            try ChildProcess.run(
                "openssl", ["req"] + key + ["-keyout", file("\(name).key"), "-out", file("\(name).csr"), "-subj", "/CN=\(name)"])
            try (extensions.joined(separator: "\n") + "\n").write(toFile: file("\(name).ext"), atomically: true, encoding: .utf8)
            try ChildProcess.run(
                "openssl",
                [
                    "x509", "-req", "-in", file("\(name).csr"), "-CA", file("\(issuer).pem"), "-CAkey", file("\(issuer).key"),
                    "-set_serial", "\(name.count)", "-days", "\(days)", "-extfile", file("\(name).ext"), "-out", file("\(name).pem"),
                ])
        }
        try issue(
            "intermediate", by: "root", days: 3650,
            extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"]
                + (intermediateOID ? ["1.2.840.113635.100.6.2.1=ASN1:NULL"] : []))
        try issue(
            "leaf", by: "intermediate", days: leafDays,
            extensions: ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature"]
                + (leafOID ? ["1.2.840.113635.100.6.11.1=ASN1:NULL"] : []))
        func der(_ name: String) throws -> [UInt8] {
            try ChildProcess.run("openssl", ["x509", "-in", file("\(name).pem"), "-outform", "DER", "-out", file("\(name).der")])
            return Array(try Data(contentsOf: URL(fileURLWithPath: file("\(name).der"))))
        }
        rootDER = try der("root")
        intermediateDER = try der("intermediate")
        leafDER = try der("leaf")
        leafKey = try P256.PrivateKey(pemRepresentation: String(contentsOfFile: file("leaf.key"), encoding: .utf8))
    }

    /// The root as a PEM file (what `--appstore-root-ca` names).
    var rootPEMPath: String { directory.file(named: "root.pem") }

    /// The root, parsed (a verifier's trust anchor).
    var root: X509Certificate { try! X509Certificate(derRepresentation: rootDER) }

    /// `payload` signed as a JWS: header `alg` (ES256 unless told), `x5c` (leaf, intermediate, root
    /// unless `x5c` is given), signed by `key` (the leaf's unless another).
    func sign(
        _ payload: [String: Any], alg: String = "ES256", x5c: [[UInt8]]? = nil, key: P256.PrivateKey? = nil
    ) -> String {
        let chain = (x5c ?? [leafDER, intermediateDER, rootDER]).map { Base64.encode($0) }
        let header = try! JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": chain], options: [.sortedKeys])
        let body = try! JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let input = Base64URL.encode(Array(header)) + "." + Base64URL.encode(Array(body))
        let signature = alg == "none" ? [] : (key ?? leafKey).signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }
}
