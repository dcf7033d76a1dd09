import Realtime
import Transport
import Wire

/// Forwards one socket's events to the feed. Its connection id is taken when it is made, before the
/// socket opens: the transport calls the delegate on the connection's loop, in order, and each call
/// is one `queue.async` onto the feed's queue, so the feed sees open, messages and close in the
/// order they happened — nothing is buffered here.
final class RealtimeConnection: WebSocketDelegate, Sendable {
    let feed: RealtimeFeed
    /// This socket's id in the feed and the hub.
    let id: ConnectionID
    let userID: String?
    let checkedAt: Int64?
    let tokenRejected: Bool
    let session: RealtimeFeed.Session?
    /// This socket's share of its client's `maxWebSocketsPerAddress`: given back when the socket
    /// closes (or, if it never opens, when this object goes away).
    let slot: AddressQuota.Slot?

    init(
        feed: RealtimeFeed, userID: String?, checkedAt: Int64?, session: RealtimeFeed.Session? = nil, tokenRejected: Bool,
        slot: AddressQuota.Slot? = nil
    ) {
        self.feed = feed
        id = feed.connectionID()
        self.slot = slot
        self.session = session
        self.userID = userID
        self.checkedAt = checkedAt
        self.tokenRejected = tokenRejected
    }

    func webSocketOpened(_ socket: WebSocket) {
        feed.opened(id, socket, userID: userID, checkedAt: checkedAt, session: session, tokenRejected: tokenRejected)
    }

    func webSocket(_ socket: WebSocket, received event: WebSocketEvent) {
        switch event {
        case .text(let text):
            feed.received(id, text: text)
        case .closed:
            slot?.release()
            feed.closed(id)
        case .binary, .ping, .pong:
            break
        }
    }

    func webSocketBecameWritable(_ socket: WebSocket) {
        feed.writable(id, socket: socket)
    }
}
