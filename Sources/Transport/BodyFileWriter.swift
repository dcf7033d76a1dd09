import Glibc
import Wire

/// Writes one streamed request body (`HTTPRequestHead.streamsBody`) to a new file
/// `<directory>/.tmp-XXXXXX` (mode 0600, `mkstemp`) as its chunks arrive, so an upload costs a chunk
/// of memory, not its size. Used on the connection's loop: the writes are plain `write(2)`s to the
/// page cache (no fsync: whoever keeps the file syncs it), the way nginx buffers large bodies.
///
/// The file is removed unless `finish()` hands it on, and then when the `HTTPBodyFile` it returns is
/// released: a connection that fails or closes mid-body leaves nothing behind. A process killed
/// mid-body leaves a `.tmp-*` file, which the application's sweep removes.
final class BodyFileWriter {
    /// The directory files are created in (created 0700 if missing).
    let directory: String
    private(set) var path: String
    private var fd: Int32
    private(set) var count = 0

    /// Creates the file. Throws the failing call and its `errno`.
    init(directory: String) throws(SocketError) {
        self.directory = directory
        var opened = Self.create(in: directory)
        if opened.fd < 0, Glibc.errno == ENOENT {
            mkdir(directory, 0o700)
            opened = Self.create(in: directory)
        }
        guard opened.fd >= 0 else { throw SocketError.current("mkstemp \(directory)") }
        path = opened.path
        fd = opened.fd
    }

    private static func create(in directory: String) -> (fd: Int32, path: String) {
        var template = Array("\(directory)/.tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (fd, path)
    }

    /// Appends `bytes`. Throws the failing call and its `errno` (`ENOSPC` when the disk is full).
    func write(_ bytes: [UInt8]) throws(SocketError) {
        precondition(fd >= 0, "written after finish or discard")
        var failure: SocketError?
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if Glibc.errno == EINTR { continue }
                    failure = .current("write \(path)")
                    return
                }
                offset += n
            }
        }
        if let failure { throw failure }
        count += bytes.count
    }

    /// Closes the file and hands it on: it is removed when the returned object is released.
    func finish() -> HTTPBodyFile {
        Glibc.close(fd)
        fd = -1
        let path = path
        return HTTPBodyFile(path: path, count: count) { unlink(path) }
    }

    /// Closes and removes the file (a body that will not be completed).
    func discard() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
        unlink(path)
    }

    deinit { discard() }
}
