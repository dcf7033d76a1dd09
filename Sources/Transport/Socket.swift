import Glibc

/// Thin wrappers over the BSD socket calls the transport uses; each failure becomes a
/// `SocketError` naming the call.
enum Socket {
    /// Opens a non-blocking listening TCP socket on `host:port` (IPv4 or IPv6 literal) with
    /// `SO_REUSEADDR`, and returns it with the port actually bound.
    static func listen(host: String, port: Int, backlog: Int) throws(SocketError) -> (fd: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let info = result else {
            throw SocketError(call: "getaddrinfo(\(host))", errno: rc == EAI_SYSTEM ? Glibc.errno : EINVAL)
        }
        defer { freeaddrinfo(result) }

        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .current("socket") }
        do throws(SocketError) {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, name: "setsockopt(SO_REUSEADDR)")
            try setNonBlocking(fd)
            guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else { throw .current("bind") }
            guard Glibc.listen(fd, Int32(clamping: backlog)) == 0 else { throw .current("listen") }
            return (fd, try boundPort(fd))
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ option: Int32, _ value: Int32, name: String) throws(SocketError) {
        var value = value
        guard setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .current(name)
        }
    }

    static func setNonBlocking(_ fd: Int32) throws(SocketError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0 else { throw .current("fcntl(F_GETFL)") }
        guard fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw .current("fcntl(O_NONBLOCK)") }
    }

    static func setNoDelay(_ fd: Int32) throws(SocketError) {
        try setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1, name: "setsockopt(TCP_NODELAY)")
    }

    static func boundPort(_ fd: Int32) throws(SocketError) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { throw .current("getsockname") }
        return address(of: storage).port
    }

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The textual IP address and port of a socket address.
    static func address(of storage: sockaddr_storage) -> (host: String, port: Int) {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                    return (Socket.string(text), Int(UInt16(bigEndian: sin.pointee.sin_port)))
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                    return (Socket.string(text), Int(UInt16(bigEndian: sin6.pointee.sin6_port)))
                }
            default:
                return ("unknown", 0)
            }
        }
    }
}
