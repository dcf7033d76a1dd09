/// The protocol version of a request line (RFC 9112 §2.3). Only 1.0 and 1.1 are served.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public var description: String { "HTTP/\(major).\(minor)" }
}
