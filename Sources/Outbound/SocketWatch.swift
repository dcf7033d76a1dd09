import CCurl
import Dispatch
import Glibc

/// The Dispatch sources watching one socket for libcurl, on the client's queue.
///
/// The sources watch a private `dup` of curl's descriptor, never curl's own number: curl closes
/// its sockets itself (right after telling us `CURL_POLL_REMOVE`, or without a word for a socket
/// it never asked us to watch), while cancelling a Dispatch source completes only later on the
/// queue. A source on curl's number could then outlive the descriptor and see the number reused
/// by the next socket — the event registration of the old one silently taken for the new. The
/// duplicate keeps the socket alive and its number ours until the last source's cancel handler
/// closes it, so no event can reach a reused number.
///
/// A watch outlives curl's `CURL_POLL_REMOVE` when its socket is one of the client's own
/// connections (`SocketLedger`): curl removes a pooled connection's watch after every request and
/// asks for it again with the next, so the watch is parked (its sources suspended) and woken, and
/// retired only when curl closes the socket (`CURLOPT_CLOSESOCKETFUNCTION`). Any other socket
/// curl asks to be watched (its resolver's socket pair) is retired at `CURL_POLL_REMOVE`: its close
/// is not reported, and a parked duplicate would keep it open.
///
/// Confined to the client's queue (not Sendable).
final class SocketWatch {
    /// curl's descriptor (what `curl_multi_socket_action` is told).
    let curlSocket: curl_socket_t
    private let watched: Int32
    private let identity: FileIdentity
    private let queue: DispatchQueue
    private let onEvent: (Int32) -> Void
    private var readSource: (any DispatchSourceRead)?
    private var writeSource: (any DispatchSourceWrite)?
    /// Whether each source is suspended (not wanted by curl for now).
    private var readSuspended = false
    private var writeSuspended = false
    private var pendingCancelHandlers = 0
    private var retired = false

    /// Device and inode of an open socket: two descriptors name the same socket iff these agree.
    private struct FileIdentity: Equatable {
        let device: UInt
        let inode: UInt

        init?(_ fd: Int32) {
            var info = stat()
            guard fstat(fd, &info) == 0 else { return nil }
            device = UInt(info.st_dev)
            inode = UInt(info.st_ino)
        }
    }

    /// Watches `curlSocket` through a duplicate; `onEvent` gets `CURL_CSELECT_IN` or `_OUT` on
    /// `queue`. Nil when the descriptor cannot be duplicated (out of descriptors): the transfer
    /// then ends at its timeout.
    init?(curlSocket: curl_socket_t, queue: DispatchQueue, onEvent: @escaping (Int32) -> Void) {
        guard let identity = FileIdentity(curlSocket) else { return nil }
        let watched = fcntl(curlSocket, F_DUPFD_CLOEXEC, 0)
        guard watched >= 0 else { return nil }
        self.curlSocket = curlSocket
        self.watched = watched
        self.identity = identity
        self.queue = queue
        self.onEvent = onEvent
    }

    /// Whether curl's descriptor still names the socket this watch was made for (false when curl
    /// closed it and the number now belongs to a new socket).
    var isCurrent: Bool { FileIdentity(curlSocket) == identity }

    /// Watches for readability and writability as curl asks (`CURL_POLL_IN`/`_OUT`/`_INOUT`; both
    /// false parks the watch). A source is made the first time its direction is wanted and from then
    /// on suspended and resumed, not cancelled and made again: registering and cancelling a Dispatch
    /// source each costs a round trip through Dispatch's event thread, and curl switches a pooled
    /// connection's watch on and off for every request it carries (Benchmarks/README.md,
    /// "Notifications: scheduler lag").
    func update(read: Bool, write: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        precondition(!retired, "a retired watch is never updated")
        if read, readSource == nil {
            let source = DispatchSource.makeReadSource(fileDescriptor: watched, queue: queue)
            source.setEventHandler { [onEvent] in onEvent(CURL_CSELECT_IN) }
            readSource = arm(source)
        } else if let source = readSource, read == readSuspended {
            if read { source.resume() } else { source.suspend() }
            readSuspended = !read
        }
        if write, writeSource == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: watched, queue: queue)
            source.setEventHandler { [onEvent] in onEvent(CURL_CSELECT_OUT) }
            writeSource = arm(source)
        } else if let source = writeSource, write == writeSuspended {
            if write { source.resume() } else { source.suspend() }
            writeSuspended = !write
        }
    }

    /// Stops watching; the duplicate closes once no source can fire any more.
    func retire() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !retired else { return }
        retired = true
        // A suspended source runs its cancel handler (and may be released) only once resumed.
        for (source, suspended) in [(readSource as (any DispatchSourceProtocol)?, readSuspended), (writeSource, writeSuspended)] {
            guard let source else { continue }
            source.cancel()
            if suspended { source.resume() }
        }
        readSource = nil
        writeSource = nil
        readSuspended = false
        writeSuspended = false
        closeIfUnwatched()
    }

    private func arm<Source: DispatchSourceProtocol>(_ source: Source) -> Source {
        pendingCancelHandlers += 1
        // Strong: the watch lives until its last source is cancelled.
        source.setCancelHandler {
            self.pendingCancelHandlers -= 1
            self.closeIfUnwatched()
        }
        source.activate()
        return source
    }

    private func closeIfUnwatched() {
        if retired && pendingCancelHandlers == 0 { Glibc.close(watched) }
    }
}

/// The sockets of one client's connections: opened by its transfers' open-socket callback
/// (`Transfer.openSocket`) and closed through its close-socket callback, which curl calls instead
/// of `close` for every socket the open-socket callback gave it (libcurl `CURLOPT_CLOSESOCKETFUNCTION`).
/// Confined to the client's queue, where curl calls both.
final class SocketLedger {
    /// Open sockets the close-socket callback will report.
    private(set) var open: Set<curl_socket_t> = []
    /// Called with a socket just before it is closed (the client retires its watch).
    var willClose: ((curl_socket_t) -> Void)?

    /// Records a socket the open-socket callback made.
    func opened(_ socket: curl_socket_t) {
        if socket != CURL_SOCKET_BAD { open.insert(socket) }
    }

    /// Closes `socket` for curl; 0 or -1 as `close`.
    func close(_ socket: curl_socket_t) -> Int32 {
        open.remove(socket)
        willClose?(socket)
        return Glibc.close(socket)
    }
}

/// CURLOPT_CLOSESOCKETFUNCTION (data: the client's `SocketLedger`).
let closeSocketCallback: curl_closesocket_callback = { ledger, socket in
    Unmanaged<SocketLedger>.fromOpaque(ledger!).takeUnretainedValue().close(socket)
}
