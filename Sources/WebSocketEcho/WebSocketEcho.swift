import Dispatch
import Glibc
import Hashing
import Synchronization
import TLS
import Transport
import Wire

/// `chronir-ws-echo`: a WebSocket echo endpoint on the server's own Transport + Wire stack, for
/// the Autobahn|Testsuite (`.ci/autobahn.sh`) and interoperability checks. Not part of the server.
///
///     chronir-ws-echo [--host 127.0.0.1] [--port 9001] [--max-message-mib 16] [--loops N]
///                     [--ping-interval SECONDS] [--no-deflate] [--tls-cert PEM --tls-key PEM]
///
/// With `--tls-cert` and `--tls-key` (the server's flags, same meaning) it speaks only TLS, so the
/// suite runs over `wss://` through the same TLS engine as the server.
/// Every path accepts a WebSocket upgrade; every text or binary message is sent back as it came.
/// permessage-deflate is negotiated with the production defaults (`server_no_context_takeover`
/// added, windows up to 15 bits, the client's parameters honoured). Message, frame and inflated
/// limits are 16 MiB (Autobahn's 9.x cases send 16 MiB messages). Heartbeat pings are off unless
/// `--ping-interval` is given (a ping in the middle of a case is noise in the report).
/// Prints `listening on HOST:PORT` once bound (`--port 0` picks a free port). SIGTERM or SIGINT:
/// Close 1001 to every peer, then exit 0.
@main
struct WebSocketEcho {
    static func main() {
        // First, before anything starts a thread (see SignalWatcher).
        let slot = ServerSlot()
        let watcher = SignalWatcher(signals: [SignalWatcher.terminate, SignalWatcher.interrupt]) { _ in
            slot.shutdownAndExit()
        }

        var host = "127.0.0.1"
        var port = 9001
        var maxMessageMiB = 16
        var loops = System.activeProcessorCount
        var pingInterval: Int?
        var deflate = true
        var tlsCertificate: String?
        var tlsKey: String?
        var arguments = CommandLine.arguments.dropFirst()
        func value(_ flag: String) -> String {
            guard let text = arguments.popFirst() else { usage("\(flag) needs a value") }
            return text
        }
        func number(_ flag: String) -> Int {
            let text = value(flag)
            guard let n = Int(text), n >= 0 else { usage("invalid value '\(text)' for \(flag)") }
            return n
        }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--host": host = value(argument)
            case "--port": port = number(argument)
            case "--max-message-mib": maxMessageMiB = max(1, number(argument))
            case "--loops": loops = max(1, number(argument))
            case "--ping-interval": pingInterval = number(argument)
            case "--no-deflate": deflate = false
            case "--tls-cert": tlsCertificate = value(argument)
            case "--tls-key": tlsKey = value(argument)
            case "-h", "--help":
                FileHandleOutput.line(
                    "usage: chronir-ws-echo [--host ADDR] [--port N] [--max-message-mib N] [--loops N] "
                        + "[--ping-interval S] [--no-deflate] [--tls-cert PEM --tls-key PEM]", fd: 1)
                exit(0)
            default: usage("unknown argument '\(argument)'")
            }
        }

        let maxBytes = maxMessageMiB << 20
        var webSocket = WebSocketConfiguration()
        webSocket.limits = WebSocketLimits(maxFrameSize: maxBytes, maxMessageSize: maxBytes)
        webSocket.deflate = deflate ? PerMessageDeflateConfiguration() : nil
        webSocket.pingInterval = pingInterval.flatMap { $0 > 0 ? .seconds($0) : nil }
        webSocket.idleTimeout = pingInterval.flatMap { $0 > 0 ? .seconds(2 * $0) : nil }

        var configuration = ServerConfiguration(host: host, port: port)
        configuration.loopCount = loops
        configuration.shutdownGracePeriod = .seconds(3)
        switch (tlsCertificate, tlsKey) {
        case (nil, nil): break
        case (.some(let certificatePath), .some(let keyPath)):
            do {
                configuration.tls = CurrentTLSContext(
                    try TLSContext(certificateChainPEM: readFile(certificatePath), privateKeyPEM: readFile(keyPath)))
            } catch {
                FileHandleOutput.error("chronir-ws-echo: TLS: \(error)")
                exit(1)
            }
        default: usage("--tls-cert and --tls-key go together")
        }
        let server = HTTPServer(configuration: configuration, responder: EchoResponder(configuration: webSocket)) {
            event in
            if case .error(let connectionID, let error) = event {
                FileHandleOutput.error("connection \(connectionID.map { String($0) } ?? "-"): \(error)")
            }
        }
        let boundPort: Int
        do {
            boundPort = try server.start()
        } catch {
            FileHandleOutput.error("chronir-ws-echo: cannot listen on \(host):\(port): \(error)")
            exit(1)
        }
        FileHandleOutput.line("listening on \(host):\(boundPort)", fd: 1)
        slot.set(server)
        withExtendedLifetime(watcher) { dispatchMain() }
    }

    /// The file's bytes (at most `TLSContext.maxPEMBytes` + 1), or exit 1 naming it.
    static func readFile(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            FileHandleOutput.error("chronir-ws-echo: cannot open \(path)")
            exit(1)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count <= TLSContext.maxPEMBytes {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    static func usage(_ message: String) -> Never {
        FileHandleOutput.error("chronir-ws-echo: \(message) (try --help)")
        exit(2)
    }
}

/// Accepts every WebSocket upgrade and echoes; anything else gets the handshake's 400/426.
struct EchoResponder: HTTPResponder {
    let configuration: WebSocketConfiguration

    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        switch WebSocketUpgrade.evaluate(request, configuration: configuration, sha1: { SHA1.hash($0) }) {
        case .accept(let accepted):
            sink.upgradeToWebSocket(accepted, configuration: configuration) { EchoDelegate() }
        case .reject(let rejected):
            sink.send(rejected.response)
        }
    }
}

/// Sends every message back unchanged.
final class EchoDelegate: WebSocketDelegate {
    func webSocket(_ socket: WebSocket, received event: WebSocketEvent) {
        switch event {
        case .text(let text): socket.send(text: text)
        case .binary(let bytes): socket.send(binary: bytes)
        case .ping, .pong, .closed: break
        }
    }
}

/// The server a signal shuts down, once it exists (a signal before that exits at once).
final class ServerSlot: Sendable {
    private let slot = Mutex<HTTPServer?>(nil)

    func set(_ server: HTTPServer) { slot.withLock { $0 = server } }

    /// Graceful shutdown (Close 1001 to every peer), then exit 0.
    func shutdownAndExit() {
        guard let server = slot.withLock({ $0 }) else { exit(0) }
        server.shutdown { exit(0) }
    }
}

/// Unbuffered lines on stdout/stderr (`write(2)`: no stdio buffers to flush before `exit`).
enum FileHandleOutput {
    static func line(_ text: String, fd: Int32) {
        let bytes = Array((text + "\n").utf8)
        bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
    }

    static func error(_ text: String) { line(text, fd: 2) }
}
