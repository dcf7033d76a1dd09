public import Wire

/// Accepting a WebSocket in a responder, in a few lines:
///
/// ```swift
/// switch WebSocketUpgrade.evaluate(request, configuration: ws, sha1: SHA1.hash) {
/// case let .accept(accepted):
///     guard allowedOrigins.permits(accepted.origin) else { return sink.send(forbidden) }  // the app's policy
///     sink.upgradeToWebSocket(accepted, configuration: ws) { RealtimeSession(...) }
/// case let .reject(rejected):
///     sink.send(rejected.response)  // 400, or 426 with Sec-WebSocket-Version: 13
/// }
/// ```
///
/// Transport imports no hashing module, so the caller passes SHA-1 (`Hashing.SHA1.hash`).
public enum WebSocketUpgrade {
    /// Checks `request` as a WebSocket opening handshake (RFC 6455 §4.2.1) and negotiates
    /// permessage-deflate as `configuration.deflate` allows. `Accepted.origin` is the `Origin`
    /// field, for the application's allow-list (RFC 6455 §10.2: refuse with 403).
    public static func evaluate(
        _ request: HTTPRequest, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        sha1: ([UInt8]) -> [UInt8]
    ) -> WebSocketHandshake.Result {
        WebSocketHandshake.evaluate(request.head, deflate: configuration.deflate, sha1: sha1)
    }
}

extension ResponseSink {
    /// Sends the `101` of `accepted` and hands the connection to a `WebSocketConnectionHandler`
    /// with the deflate parameters agreed, telling the delegate `makeDelegate` creates (called
    /// once, on the connection's loop) what happens.
    public func upgradeToWebSocket(
        _ accepted: WebSocketHandshake.Accepted, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        makeDelegate: @escaping @Sendable () -> any WebSocketDelegate
    ) {
        let deflate = accepted.deflate
        upgrade(accepted.response) {
            WebSocketConnectionHandler(configuration: configuration, deflate: deflate, delegate: makeDelegate())
        }
    }
}
