/// The protocol spoken on a connection. A `Connection` owns the socket and its buffers and calls
/// its handler with what happens; the handler decides what to write and when to close.
///
/// Every method is called on the connection's loop, never concurrently, so a handler keeps its
/// state in plain stored properties. `HTTPConnectionHandler` is the HTTP/1.1 implementation; after
/// a `101 Switching Protocols` response it hands the connection to the next protocol's handler
/// with `Connection.replaceHandler(_:initialBytes:)` (the WebSocket seam).
public protocol ConnectionHandler: AnyObject {
    /// The handler was installed on `connection` (at accept, or by `replaceHandler`).
    func handlerAdded(to connection: Connection)
    /// `bytes` arrived. They are valid only during the call (they live in the loop's read buffer).
    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection)
    /// The peer closed its sending side (`read` returned 0). Reading has stopped; writing still works.
    func inputEnded(on connection: Connection)
    /// `Connection.isWritable` became true again: queued output drained below the low-water mark.
    func writabilityChanged(on connection: Connection)
    /// The deadline set with `Connection.setDeadline` passed (it is cleared before this call).
    func deadlinePassed(on connection: Connection)
    /// The server is shutting down gracefully: finish the current exchange, then close.
    func shutdownRequested(on connection: Connection)
    /// The connection closed (for whatever reason); the last call this handler gets.
    func connectionClosed(_ connection: Connection)
}

extension ConnectionHandler {
    /// Default: nothing to prepare.
    public func handlerAdded(to connection: Connection) {}
    /// Default: nothing more can arrive, so flush what is queued and close.
    public func inputEnded(on connection: Connection) { connection.close() }
    /// Default: nothing was waiting for room.
    public func writabilityChanged(on connection: Connection) {}
    /// Default: a deadline without a plan closes the connection.
    public func deadlinePassed(on connection: Connection) { connection.closeNow() }
    /// Default: flush and close.
    public func shutdownRequested(on connection: Connection) { connection.close() }
    /// Default: nothing to release.
    public func connectionClosed(_ connection: Connection) {}
}
