import Foundation

/// A throwaway certificate authority and one server certificate it signed, for TLS tests on
/// loopback: P-256 keys made with the `openssl` command-line tool in a temporary directory (gone
/// with the object). The server certificate names `localhost`, `127.0.0.1` and `::1` unless told
/// otherwise, and is valid for two days.
public final class TestCertificateAuthority: Sendable {
    /// The directory holding the files.
    public let directory: TemporaryDirectory
    /// The CA certificate (PEM): what a client trusts (`caFile`).
    public var certificatePath: String { directory.file(named: "ca.pem") }
    /// The server certificate (PEM), signed by the CA.
    public var serverCertificatePath: String { directory.file(named: "server.pem") }
    /// The server certificate's private key (PEM, unencrypted).
    public var serverKeyPath: String { directory.file(named: "server.key") }

    /// The names a server certificate carries by default: every way a test reaches loopback.
    public static let loopbackNames = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"]

    /// Makes the CA and a server certificate for `serverNames` (subjectAltName entries; a few
    /// hundred milliseconds of `openssl`).
    public init(commonName: String = "Chronir Test CA", serverNames: [String] = loopbackNames) throws {
        directory = TemporaryDirectory(prefix: "test-ca")
        let file = directory.file(named:)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try ChildProcess.run(
            "openssl",
            ["req", "-x509"] + key + [
                "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "2", "-subj", "/CN=\(commonName)",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        try ChildProcess.run(
            "openssl", ["req"] + key + ["-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=localhost"])
        let extensions = """
            subjectAltName=\(serverNames.joined(separator: ","))
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """
        try extensions.write(toFile: file("server.ext"), atomically: true, encoding: .utf8)
        try ChildProcess.run(
            "openssl",
            [
                "x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-set_serial", "1",
                "-days", "2", "-extfile", file("server.ext"), "-out", file("server.pem"),
            ])
    }
}
