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

/// The `--http-redirect-port` listener's only answer: `308 Permanent Redirect` to the same target
/// on the configured public https origin (RFC 9110 §15.4.9 keeps the method and body). The host is
/// `--public-base-url`'s, never the request's `Host` (reflecting `Host` would let anyone who can
/// make a victim's browser send one — a sibling name, a proxy — turn the redirect into an open one);
/// the port is the base URL's when it is an https URL naming one, else the TLS listener's (omitted
/// when 443). Nothing else is served in plain text.
struct HTTPSRedirectResponder: HTTPResponder {
    /// `https://host[:port]`, without a path; nil when the base URL has no host (every answer is then 400).
    let origin: String?

    init(publicBaseURL: String, httpsPort: Int) {
        origin = Self.origin(publicBaseURL: publicBaseURL, httpsPort: httpsPort)
    }

    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        guard let origin else {
            return sink.send(
                HTTPResponse(
                    status: .badRequest, headers: ["Content-Type": "text/plain; charset=utf-8"],
                    body: Array("400 Bad Request: use https.\n".utf8)))
        }
        let target = request.head.target.hasPrefix("/") ? request.head.target : "/"
        let location = origin + target
        sink.send(
            HTTPResponse(
                status: HTTPStatus(code: 308, reasonPhrase: "Permanent Redirect"),
                headers: ["Location": location, "Content-Type": "text/plain; charset=utf-8"],
                body: Array("Use \(location)\n".utf8)))
    }

    /// The https origin a redirect names: `publicBaseURL`'s host (an IPv6 literal in brackets), its
    /// port when it is an https URL with one, else `httpsPort` (none written for 443).
    static func origin(publicBaseURL: String, httpsPort: Int) -> String? {
        guard let components = URLComponents(string: publicBaseURL), var host = components.host, !host.isEmpty else { return nil }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        let port = components.scheme?.lowercased() == "https" ? components.port ?? httpsPort : httpsPort
        return "https://\(host)\(port == 443 ? "" : ":\(port)")"
    }
}
