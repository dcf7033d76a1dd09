import Dispatch
import Foundation
import Logging
import Synchronization
import TLS
import Transport
import Wire

/// Keeps the API port's TLS context current: `SIGHUP` rebuilds it from the files (a bad file
/// keeps the one in use, and the log says why), a daily tick rebuilds it from the PEM already
/// held — new session-ticket keys, since OpenSSL's are per context — and warns while the
/// certificate expires within `expiryWarning`. Open connections keep the context they started
/// with (docs/operations.md#tls).
final class TLSReloader: Sendable {
    /// How close to expiry the certificate must be for the daily warning (certbot renews at 30 days left).
    static let expiryWarning = 14 * 86_400

    let material: TLSMaterial
    let slot: CurrentTLSContext
    private let logger: Logger
    private let pem: Mutex<(certificate: [UInt8], key: [UInt8])>
    /// Where reloads, rotations and expiry checks run, one at a time.
    private let loop = EventLoop(label: "chronir.tls-reload")
    private var queue: DispatchQueue { loop.queue }
    private let timer = Mutex<Scheduled?>(nil)

    init(material: TLSMaterial, loaded: (context: TLSContext, certificatePEM: [UInt8], keyPEM: [UInt8]), logger: Logger) {
        self.material = material
        self.slot = CurrentTLSContext(loaded.context)
        self.logger = logger
        self.pem = Mutex((loaded.certificatePEM, loaded.keyPEM))
    }

    /// Logs the certificate in use and starts the daily ticket-key rotation and expiry check.
    func start() {
        describe("TLS certificate", slot.context)
        checkExpiry()
        let tick = loop.scheduleRepeating(every: TLSContext.ticketKeyLifetime) { [self] in
            rotateTicketKeys()
            checkExpiry()
        }
        timer.withLock { $0 = tick }
    }

    /// Stops the daily tick.
    func stop() { timer.withLock { $0?.cancel() } }

    /// `SIGHUP`: the files as they are now, or the current context kept and the reason logged.
    func reload() {
        queue.sync {
            do {
                let loaded = try material.load()
                pem.withLock { $0 = (loaded.certificatePEM, loaded.keyPEM) }
                slot.replace(with: loaded.context)
                describe("SIGHUP: TLS certificate reloaded", loaded.context)
                checkExpiry()
            } catch {
                logger.error(
                    "SIGHUP: TLS certificate not reloaded; keeping the one in use", metadata: ["error": "\(error)"])
            }
        }
    }

    /// A fresh context (so fresh ticket keys) from the PEM in memory: tickets sealed before it
    /// stop resuming, and those clients do one full handshake.
    private func rotateTicketKeys() {
        let (certificate, key) = pem.withLock { $0 }
        do {
            slot.replace(with: try TLSContext(certificateChainPEM: certificate, privateKeyPEM: key))
            logger.debug("TLS session-ticket keys rotated")
        } catch {
            logger.error("TLS session-ticket key rotation failed", metadata: ["error": "\(error)"])
        }
    }

    /// Seconds until the served certificate expires (negative once it has), read now.
    var secondsUntilExpiry: Int? {
        slot.context.certificate?.secondsUntilExpiry(nowEpochSeconds: Int(Date().timeIntervalSince1970))
    }

    private func checkExpiry() {
        guard let certificate = slot.context.certificate else { return }
        let left = certificate.secondsUntilExpiry(nowEpochSeconds: Int(Date().timeIntervalSince1970))
        guard left < Self.expiryWarning else { return }
        logger.warning(
            left <= 0 ? "TLS certificate has expired" : "TLS certificate expires within 14 days",
            metadata: [
                "subject": "\(certificate.subject)", "days_left": "\(left / 86_400)",
                "not_after": "\(Self.timestamp(certificate.notAfterEpochSeconds))",
            ])
    }

    private func describe(_ message: Logger.Message, _ context: TLSContext) {
        guard let certificate = context.certificate else { return }
        logger.notice(
            message,
            metadata: [
                "subject": "\(certificate.subject)", "not_after": "\(Self.timestamp(certificate.notAfterEpochSeconds))",
                "sha256": "\(certificate.sha256Fingerprint)", "file": "\(material.certificatePath)",
            ])
    }

    private static func timestamp(_ epochSeconds: Int) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(epochSeconds)))
    }
}

/// The `--http-redirect-port` listener's only answer: `308 Permanent Redirect` to the same host
/// and target on https (RFC 9110 §15.4.9 keeps the method and body), `400` without a usable
/// `Host`. Nothing else is served in plain text.
struct HTTPSRedirectResponder: HTTPResponder {
    /// The TLS port the redirect names (omitted from the URL when 443).
    let httpsPort: Int

    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        guard let host = request.head.headers[first: "Host"].flatMap(Self.hostName) else {
            return sink.send(
                HTTPResponse(
                    status: .badRequest, headers: ["Content-Type": "text/plain; charset=utf-8"],
                    body: Array("400 Bad Request: no usable Host header; use https.\n".utf8)))
        }
        let target = request.head.target.hasPrefix("/") ? request.head.target : "/"
        let location = "https://\(host)\(httpsPort == 443 ? "" : ":\(httpsPort)")\(target)"
        sink.send(
            HTTPResponse(
                status: HTTPStatus(code: 308, reasonPhrase: "Permanent Redirect"),
                headers: ["Location": location, "Content-Type": "text/plain; charset=utf-8"],
                body: Array("Use \(location)\n".utf8)))
    }

    /// The host of a `Host` value without its port (`example.org`, `[::1]`), or nil when it holds
    /// anything a host name or address literal cannot.
    static func hostName(_ value: String) -> String? {
        let name: Substring
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return nil }
            name = value[...close]
        } else {
            name = value.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        }
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || ".-[]:".unicodeScalars.contains(scalar))
        }
        return allowed && !name.isEmpty && name.count <= 253 ? String(name) : nil
    }
}
