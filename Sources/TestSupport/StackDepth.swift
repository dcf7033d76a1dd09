#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The number of frames on the calling thread's stack, from libc's `backtrace(3)` (looked up at run
/// time: Swift's Glibc module does not export `<execinfo.h>`). A count of work that does not depend on
/// the clock: a call path whose depth grows with the number of earlier calls has per-call cost that
/// grows with history (a closure re-wrapped in one more thunk on every commit).
public enum StackDepth {
    private typealias Backtrace = @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32

    /// Frames above this many are not counted; far beyond any healthy call path.
    public static let limit: Int32 = 65_536

    private static let backtrace: Backtrace? = {
        guard let symbol = dlsym(nil, "backtrace") else { return nil }
        return unsafeBitCast(symbol, to: Backtrace.self)
    }()

    /// Frames on the current stack (capped at `limit`); nil when libc has no `backtrace`.
    public static func current() -> Int? {
        guard let backtrace else { return nil }
        var frames = [UnsafeMutableRawPointer?](repeating: nil, count: Int(limit))
        return Int(frames.withUnsafeMutableBufferPointer { backtrace($0.baseAddress, limit) })
    }
}
