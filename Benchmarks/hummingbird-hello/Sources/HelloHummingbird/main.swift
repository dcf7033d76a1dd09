// GET /healthz → {"status":"ok"} on Hummingbird 2, default configuration, no logging per request.
import Hummingbird
import Logging

let port = Int(CommandLine.arguments.dropFirst().first ?? "8081") ?? 8081
let router = Router()
router.get("healthz") { _, _ -> Response in
    Response(
        status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
        body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
}
var logger = Logger(label: "hello")
logger.logLevel = .warning
let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
try await app.runService()
