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

/// A buffered, thread-safe line sink on a file descriptor (stderr by default). Lines are appended to
/// an in-memory buffer and written in batches — every `flushInterval`, when the buffer passes
/// `flushThreshold`, for every line at `warning` or above, and on `flush()` — so per-request logging
/// costs no syscall on the event loop.
public final class LogSink: Sendable {
    /// Buffer size that triggers an immediate write.
    public static let flushThreshold = 64 * 1024
    /// Longest time a line waits in the buffer.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(200)
    /// A line longer than this is cut (a log line must never be a memory problem).
    public static let maxLineBytes = 16 * 1024

    private let fd: Int32
    private let buffer = Mutex<[UInt8]>([])
    private let timer: any DispatchSourceTimer

    /// Writes to `fd` (not closed by the sink).
    public init(fd: Int32 = 2) {
        self.fd = fd
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "chronir.log.flush"))
        self.timer = timer
        timer.schedule(deadline: .now() + Self.flushInterval, repeating: Self.flushInterval)
        timer.setEventHandler { [weak self] in self?.flush() }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Appends one finished line (without its newline; one is added) and writes at once when
    /// `urgent` or the buffer is full.
    public func append(line: [UInt8], urgent: Bool = false) {
        let full = buffer.withLock { buffer -> Bool in
            if line.count > Self.maxLineBytes {
                buffer.append(contentsOf: line[..<Self.maxLineBytes])
                buffer.append(contentsOf: "…[truncated]".utf8)
            } else {
                buffer.append(contentsOf: line)
            }
            buffer.append(10)
            return buffer.count >= Self.flushThreshold
        }
        if urgent || full { flush() }
    }

    /// Writes everything buffered so far.
    public func flush() {
        let bytes = buffer.withLock { buffer -> [UInt8] in
            let taken = buffer
            buffer = []
            buffer.reserveCapacity(taken.count)
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
