import ArgumentParser
import Foundation
import TLS

/// `chronir-server`'s TLS flags (docs/configuration.md#tls), resolved with their `CHRONIR_*`
/// variables. With a certificate and key the API port speaks only TLS (https, wss).
struct TLSOptions: ParsableArguments {
    @Option(
        help: "PEM certificate chain (leaf first); with --tls-key the port speaks only TLS. [env: CHRONIR_TLS_CERT] (default: plain HTTP)")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert (unencrypted). [env: CHRONIR_TLS_KEY]")
    var tlsKey: String?

    @Option(help: "Strict-Transport-Security max-age in seconds with TLS; 0 sends none. [env: CHRONIR_HSTS_MAX_AGE] (default: 31536000)")
    var hstsMaxAge: Int?

    @Option(
        help: "Also listen for plain HTTP here and answer every request 308 to https. [env: CHRONIR_HTTP_REDIRECT_PORT] (default: none)")
    var httpRedirectPort: Int?

    /// What the flags ask for, checked; nil without a certificate (plain HTTP).
    struct Resolved: Sendable {
        let certificatePath: String
        let keyPath: String
        /// nil: no `Strict-Transport-Security` header.
        let hstsMaxAge: Int?
        let redirectPort: Int?
    }

    /// One year: the minimum the browsers' HSTS preload lists accept.
    static let defaultHSTSMaxAge = 31_536_000

    func resolve(_ options: OptionValues) throws -> Resolved? {
        let certificate = options.value(tlsCert, "TLS_CERT")
        let key = options.value(tlsKey, "TLS_KEY")
        let maxAge = try options.parse(hstsMaxAge.map(String.init), "HSTS_MAX_AGE", Self.defaultHSTSMaxAge) {
            Int($0).flatMap { (0...(10 * 31_536_000)).contains($0) ? $0 : nil }
        }
        let redirect = try options.parseOptional(httpRedirectPort.map(String.init), "HTTP_REDIRECT_PORT") {
            Int($0).flatMap { (0...65535).contains($0) ? $0 : nil }
        }
        switch (certificate, key) {
        case (nil, nil):
            if redirect != nil { throw ValidationError("http-redirect-port needs --tls-cert and --tls-key") }
            return nil
        case (.some, nil): throw ValidationError("tls-cert needs --tls-key")
        case (nil, .some): throw ValidationError("tls-key needs --tls-cert")
        case (.some(let certificate), .some(let key)):
            return Resolved(certificatePath: certificate, keyPath: key, hstsMaxAge: maxAge == 0 ? nil : maxAge, redirectPort: redirect)
        }
    }
}

/// Reads the certificate and key files into a `TLSContext`. Used at start-up (a failure stops the
/// server) and on `SIGHUP` (a failure keeps the context in use and is logged).
struct TLSMaterial: Sendable {
    let certificatePath: String
    let keyPath: String

    /// Why the files could not be used: the path and the reason.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The context built from the files as they are now.
    func load() throws(Failure) -> (context: TLSContext, certificatePEM: [UInt8], keyPEM: [UInt8]) {
        let certificatePEM = try read(certificatePath)
        let keyPEM = try read(keyPath)
        do {
            return (try TLSContext(certificateChainPEM: certificatePEM, privateKeyPEM: keyPEM), certificatePEM, keyPEM)
        } catch {
            throw Failure(description: "\(certificatePath) + \(keyPath): \(error)")
        }
    }

    private func read(_ path: String) throws(Failure) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Failure(description: "\(path): cannot open") }
        defer { try? handle.close() }
        do {
            let data = try handle.read(upToCount: TLSContext.maxPEMBytes + 1) ?? Data()
            guard data.count <= TLSContext.maxPEMBytes else { throw Failure(description: "\(path): over 1 MiB") }
            return Array(data)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "\(path): \(error)")
        }
    }
}
