// The benchmark endpoints on Hummingbird 2 + hummingbird-websocket 2.8.1, written the way the
// Hummingbird examples write them (default configuration, no compression, logging at warning):
//
//   GET  /echo       WebSocket: every text or binary message is sent back as it came.
//   GET  /subscribe  WebSocket: registers the socket, sends {"type":"snapshot"} (so a client knows it
//                    is registered), then receives every broadcast as a text message.
//   POST /broadcast  the request body (≤ 64 KiB) is sent to every subscribed socket → 204. Like
//                    chronir's mutation → `change` on `group:<id>`: the response does not wait for
//                    delivery; each subscriber's handler drains its own queue.
//   GET  /healthz    {"status":"ok"}
//
//   HummingbirdWS PORT      (prints nothing; `curl /healthz` tells when it is up)
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers

/// Every subscribed socket's outbound queue, by a per-connection number.
final class Subscribers: Sendable {
    private let state = NIOLockedValueBox<(next: Int, queues: [Int: AsyncStream<String>.Continuation])>((0, [:]))

    func add(_ continuation: AsyncStream<String>.Continuation) -> Int {
        state.withLockedValue { state in
            state.next += 1
            state.queues[state.next] = continuation
            return state.next
        }
    }

    func remove(_ id: Int) { _ = state.withLockedValue { $0.queues.removeValue(forKey: id) } }

    func broadcast(_ text: String) {
        let queues = state.withLockedValue { Array($0.queues.values) }
        for queue in queues { queue.yield(text) }
    }
}

let port = Int(CommandLine.arguments.dropFirst().first ?? "8082") ?? 8082
let subscribers = Subscribers()
let router = Router(context: BasicWebSocketRequestContext.self)

router.get("healthz") { _, _ -> Response in
    Response(
        status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
        body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
}

router.post("broadcast") { request, _ -> HTTPResponse.Status in
    let body = try await request.body.collect(upTo: 64 * 1024)
    subscribers.broadcast(String(buffer: body))
    return .noContent
}

router.ws("echo") { inbound, outbound, _ in
    for try await message in inbound.messages(maxSize: 1 << 20) {
        switch message {
        case .text(let text): try await outbound.write(.text(text))
        case .binary(let buffer): try await outbound.write(.binary(buffer))
        }
    }
}

router.ws("subscribe") { inbound, outbound, _ in
    let (stream, continuation) = AsyncStream<String>.makeStream()
    let id = subscribers.add(continuation)
    defer { subscribers.remove(id) }
    try await outbound.write(.text(#"{"type":"snapshot"}"#))
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            for await text in stream { try await outbound.write(.text(text)) }
        }
        // Reading to the end notices the peer's close; then stop the writer.
        for try await _ in inbound {}
        continuation.finish()
        try await group.waitForAll()
    }
}

var logger = Logger(label: "hummingbird-ws")
logger.logLevel = .warning
let app = Application(
    router: router,
    server: .http1WebSocketUpgrade(webSocketRouter: router),
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    logger: logger)
try await app.runService()
