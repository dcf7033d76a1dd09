import Glibc

/// An operating-system error from a socket call: keeps the `errno` and the name of the call that
/// failed (`accept`, `bind`, `setsockopt(TCP_NODELAY)`, …) so a log line says exactly what broke.
public struct SocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failing call, as written in code (`"bind"`, `"setsockopt(SO_REUSEADDR)"`).
    public var call: String
    /// The `errno` value the call left behind.
    public var errno: Int32

    /// Wraps an `errno` value reported by `call`.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// `"bind: Address already in use (errno 98)"`.
    public var description: String {
        "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// The error the last failing call left in the thread's `errno`.
    static func current(_ call: String) -> SocketError {
        SocketError(call: call, errno: Glibc.errno)
    }
}
