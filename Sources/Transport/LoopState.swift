import Glibc

/// Per-loop state shared by the connections of one `EventLoop`: touched only on that loop's queue.
///
/// - a reused read buffer (a read never allocates),
/// - the registry of open connections, swept by one coarse timer for deadlines (setting a
///   deadline is a store, not a timer reschedule: nothing per request touches the timer heap),
/// - the cached `Date` header value, recomputed at most once per second.
final class LoopState: @unchecked Sendable {
    // @unchecked: confined to the owning loop's queue; `EventLoop` holds it only to reach it there.

    /// Size of the per-loop read buffer; one `read` takes at most this much.
    static let readBufferSize = 64 * 1024

    /// Back-reference set by the loop's initialiser (the loop owns this object).
    var loop: Unmanaged<EventLoop>!
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: LoopState.readBufferSize, alignment: 16)
    private(set) var connections: [Connection] = []
    private var sweepTimer: Scheduled?
    private var sweepInterval = Duration.seconds(1)

    private var cachedDate = ""
    private var cachedDateValidUntil: UInt64 = 0

    /// Size of the per-loop TLS plaintext buffer: one record's worth (RFC 8446 §5.1: at most 2^14 bytes).
    static let tlsPlaintextBufferSize = 16 * 1024
    private var tlsPlaintext: UnsafeMutableRawBufferPointer?

    /// Where TLS connections of this loop decrypt into; allocated the first time a TLS connection reads.
    var tlsPlaintextBuffer: UnsafeMutableRawBufferPointer { Self.allocatedOnce(&tlsPlaintext, byteCount: Self.tlsPlaintextBufferSize) }

    private var fileChunk: UnsafeMutableRawBufferPointer?

    /// Where TLS connections of this loop read file bodies into (`Connection.fileChunkBytes`); allocated
    /// the first time one sends a file.
    var fileChunkBuffer: UnsafeMutableRawBufferPointer { Self.allocatedOnce(&fileChunk, byteCount: Connection.fileChunkBytes) }

    /// The buffer in `slot`, allocated (`byteCount` bytes, 16-aligned) the first time it is asked for;
    /// `deinit` frees it.
    private static func allocatedOnce(_ slot: inout UnsafeMutableRawBufferPointer?, byteCount: Int) -> UnsafeMutableRawBufferPointer {
        if let slot { return slot }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        slot = buffer
        return buffer
    }

    deinit {
        readBuffer.deallocate()
        tlsPlaintext?.deallocate()
        fileChunk?.deallocate()
    }

    /// Adds `connection` to the deadline sweep, whose tick is at most `tick`.
    func register(_ connection: Connection, tick: Duration) {
        connection.registryIndex = connections.count
        connections.append(connection)
        let wanted = sweepTimer == nil ? tick : min(tick, sweepInterval)
        if sweepTimer != nil && wanted == sweepInterval { return }
        sweepTimer?.cancel()
        sweepInterval = wanted
        sweepTimer = loop.takeUnretainedValue().scheduleRepeating(every: wanted) { [weak self] in
            self?.sweep()
        }
    }

    /// Removes `connection` from the sweep (swap-remove, O(1)).
    func unregister(_ connection: Connection) {
        let index = connection.registryIndex
        guard index >= 0, index < connections.count, connections[index] === connection else { return }
        let last = connections.removeLast()
        if index < connections.count {
            connections[index] = last
            last.registryIndex = index
        }
        connection.registryIndex = -1
    }

    /// One tick: fires every deadline that has passed; stops the timer when no connection is left.
    private func sweep() {
        if connections.isEmpty {
            sweepTimer?.cancel()
            sweepTimer = nil
            return
        }
        // Each connection's deadlines are on its server's clock (`ConnectionEnvironment.clock`);
        // read it once per environment run (one server's connections share one).
        var due: [(Connection, UInt64)] = []
        var environment: ConnectionEnvironment?
        var now: UInt64 = 0
        for connection in connections {
            if connection.environment !== environment {
                environment = connection.environment
                now = connection.now
            }
            if connection.nextDeadline <= now { due.append((connection, now)) }
        }
        for (connection, now) in due { connection.deadlinesPassed(now: now) }
    }

    /// The `Date` header value for `now` (monotonic), recomputed when the wall-clock second changes.
    func httpDate(now: UInt64, format: (Int) -> String) -> String {
        if now >= cachedDateValidUntil {
            var wall = timespec()
            clock_gettime(CLOCK_REALTIME, &wall)
            cachedDate = format(Int(wall.tv_sec))
            cachedDateValidUntil = now &+ UInt64(1_000_000_000 - Int(wall.tv_nsec))
        }
        return cachedDate
    }
}
