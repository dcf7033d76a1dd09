@preconcurrency public import Dispatch
import Domain
import Foundation
import Logging
import Synchronization
import Transport

/// Log line format: `text` for people, `json` (one object per line) for collectors.
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}

/// A buffered, thread-safe line sink on a file descriptor (stderr by default). Lines are formatted
/// straight into an in-memory buffer (no array per line) and written in batches — every
/// `flushInterval`, soon after the buffer passes `flushThreshold` (on the sink's own queue, not the
/// caller's thread), for every line at `warning` or above, and on `flush()` — so per-request
/// logging costs no syscall on the event loop. Batches reach the descriptor in the order their lines
/// were appended; `flush()` returns once everything appended before it is written (graceful
/// shutdown calls it last).
public final class LogSink: Sendable {
    /// Buffer size that triggers a write (on the sink's queue).
    public static let flushThreshold = 64 * 1024
    /// Buffer size at which the appending thread writes itself: a descriptor that cannot keep up
    /// (a full pipe) slows the loggers down instead of growing the buffer without bound.
    public static let blockingThreshold = 4 * flushThreshold
    /// Longest time a line waits in the buffer.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(200)
    /// A line longer than this is cut (a log line must never be a memory problem).
    public static let maxLineBytes = 16 * 1024

    private let fd: Int32
    private let pending = Mutex(LogBuffer())
    /// Held while a batch is taken and written, so batches leave in order.
    private let writing = Mutex(())
    private let queue = DispatchQueue(label: "chronir.log.flush")
    private let timer: any DispatchSourceTimer

    /// Writes to `fd` (not closed by the sink).
    public init(fd: Int32 = 2) {
        self.fd = fd
        let timer = DispatchSource.makeTimerSource(queue: queue)
        self.timer = timer
        timer.schedule(deadline: .now() + Self.flushInterval, repeating: Self.flushInterval)
        timer.setEventHandler { [weak self] in self?.flush() }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Appends one line that `build` writes into the buffer (`LogLine`, which adds the newline and
    /// cuts a line past `maxLineBytes`); writes at once when `urgent`, and a full buffer soon after,
    /// on the sink's queue.
    func append(urgent: Bool = false, _ build: (inout LogBuffer) -> Void) {
        enum Next { case nothing, queueWrite, writeNow }
        let next = pending.withLock { pending -> Next in
            build(&pending)
            if urgent || pending.bytes.count >= Self.blockingThreshold { return .writeNow }
            guard pending.bytes.count >= Self.flushThreshold, !pending.writeQueued else { return .nothing }
            pending.writeQueued = true
            return .queueWrite
        }
        switch next {
        case .nothing: break
        case .queueWrite: queue.async { self.flush() }
        case .writeNow: flush()
        }
    }

    /// Writes everything appended so far, then returns.
    public func flush() {
        writing.withLock { _ in
            let bytes = pending.withLock { pending -> [UInt8] in
                pending.writeQueued = false
                let taken = pending.bytes
                pending.bytes = []
                pending.bytes.reserveCapacity(min(taken.count, Self.blockingThreshold))
                return taken
            }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return  // nowhere left to report a failing log descriptor
                }
                offset += n
            }
        }
    }
}

/// What a `LogSink`'s lock guards: the bytes not yet written, and what lines are formatted with.
struct LogBuffer {
    var bytes: [UInt8] = []
    var timestamps = TimestampCache()
    let scratch = LineScratch(capacity: LogSink.maxLineBytes)
    /// A write of the full buffer is queued on the sink's queue and has not taken the bytes yet.
    var writeQueued = false
}

/// RFC 3339 time stamps of log lines, the text up to the second (`2026-02-06T09:00:00.`) made once
/// per second: a line in the same second as the previous one only changes the milliseconds.
struct TimestampCache {
    private var second = Int64.min
    private var current: [UInt8] = []

    /// `Timestamp.format(milliseconds)`'s bytes.
    mutating func text(_ milliseconds: Int64) -> [UInt8] {
        var second = milliseconds / 1000
        var milli = milliseconds % 1000
        if milli < 0 {  // floor, for instants before 1970
            second -= 1
            milli += 1000
        }
        if second != self.second {
            current.removeAll(keepingCapacity: true)
            Timestamp.append(second * 1000, to: &current)  // …SS.000Z
            self.second = second
        }
        let end = current.count - 1  // …SS.mmmZ: the digits sit before the Z
        current[end - 3] = 48 + UInt8(milli / 100)
        current[end - 2] = 48 + UInt8(milli / 10 % 10)
        current[end - 1] = 48 + UInt8(milli % 10)
        return current
    }
}
