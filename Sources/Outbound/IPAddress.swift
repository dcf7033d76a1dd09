import Glibc

/// An IPv4 or IPv6 address as the kernel is about to connect to it (network byte order kept as
/// bytes, so the classification reads the wire form, not a host-order integer).
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// Four bytes, most significant first (`127.0.0.1` is `[127, 0, 0, 1]`).
    case v4(UInt8, UInt8, UInt8, UInt8)
    /// Sixteen bytes, most significant first.
    case v6([UInt8])

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (`inet_pton`); nil for anything else,
    /// host names included.
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(ipv4NetworkOrder: v4)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }

    /// The address of a `sockaddr_in` or `sockaddr_in6` at `pointer` (`length` bytes long); nil for
    /// other families or a short structure.
    public init?(sockaddr pointer: UnsafeRawPointer, length: Int) {
        guard length >= MemoryLayout<sa_family_t>.size else { return nil }
        let family = Int32(pointer.loadUnaligned(as: sa_family_t.self))
        switch family {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            self.init(ipv4NetworkOrder: pointer.loadUnaligned(as: sockaddr_in.self).sin_addr)
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            var address = pointer.loadUnaligned(as: sockaddr_in6.self).sin6_addr
            self = .v6(withUnsafeBytes(of: &address) { Array($0) })
        default:
            return nil
        }
    }

    private init(ipv4NetworkOrder address: in_addr) {
        var address = address
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        self = .v4(bytes[0], bytes[1], bytes[2], bytes[3])
    }

    /// The address as `inet_ntop` writes it (`127.0.0.1`, `::ffff:10.0.0.1`).
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch self {
        case .v4(let a, let b, let c, let d):
            var bytes = (a, b, c, d)
            _ = withUnsafeBytes(of: &bytes) { inet_ntop(AF_INET, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        case .v6(var bytes):
            _ = bytes.withUnsafeMutableBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
