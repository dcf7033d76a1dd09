// The ceiling of HTTP keep-alive on Dispatch sources (issue 23): accept, read until a short read, answer
// every complete request head with a canned `200 {"status":"ok"}`, one `send` per read. No parser,
// no router, no deadlines, no logging: what chronir-server's transport costs beyond this is overhead.
// Built by Benchmarks/http-healthz.sh with `swiftc -O -parse-as-library`; `dispatch-ceiling PORT`.
import Dispatch
import Glibc

@main
enum DispatchCeiling {
    static let response = Array(
        ("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 15\r\n"
            + "Date: Thu, 01 Jan 2026 00:00:00 GMT\r\n\r\n{\"status\":\"ok\"}").utf8)
    static var sources: [Int32: any DispatchSourceRead] = [:]  // touched on `listenerQueue` only

    static func main() {
        let port = UInt16(CommandLine.arguments.dropFirst().first.flatMap { UInt16($0) } ?? 8080)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 1024) == 0 else { fatalError("bind/listen: errno \(errno)") }
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        let loops = (0..<max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))).map { DispatchQueue(label: "ceiling.\($0)") }
        let listenerQueue = DispatchQueue(label: "ceiling.listener")
        var next = 0
        let accepting = DispatchSource.makeReadSource(fileDescriptor: listener, queue: listenerQueue)
        accepting.setEventHandler {
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { return }
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                next += 1
                serve(fd, on: loops[next % loops.count], listenerQueue: listenerQueue)
            }
        }
        accepting.activate()
        dispatchMain()
    }

    static func serve(_ fd: Int32, on queue: DispatchQueue, listenerQueue: DispatchQueue) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        var previous: UInt8 = 0, run = 0  // how much of "\r\n\r\n" the last read ended in
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            while true {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n <= 0 {
                    if n < 0 && errno == EAGAIN { return }
                    source.cancel()
                    return
                }
                var heads = 0
                for byte in buffer[..<n] {
                    run = (byte == 10 && previous == 13) ? run + 1 : (byte == 13 ? run : 0)
                    if run == 2 { heads += 1; run = 0 }
                    previous = byte
                }
                var out: [UInt8] = []
                for _ in 0..<heads { out += response }
                _ = out.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < buffer.count { return }  // a short read emptied the socket: no read to see EAGAIN
            }
        }
        source.setCancelHandler {
            close(fd)
            buffer.deallocate()
            listenerQueue.async { sources[fd] = nil }
        }
        listenerQueue.async { sources[fd] = source }
        source.activate()
    }
}
