import Domain
import Foundation
import Hashing
public import Wire

/// The content-addressed file store of attachments (docs/attachments.md#storage):
/// `<data-dir>/attachments/ab/cd/<sha256>`, each file mode 0600, directories 0700. A file is written
/// to a temporary file in its final directory, fsynced, renamed over its name and the directory
/// fsynced, so a name only ever holds the whole file; a crash leaves at most a `.tmp-*` file, which
/// the orphan sweep removes. Identical bytes share one file. A file's modification time is set to
/// the server clock's `now` at every store (also when it already existed), which is what the sweep's
/// grace is measured from. An upload the transport streamed to `<root>/.tmp-XXXXXX`
/// (`ServerConfiguration.uploadDirectory` is `root`) is stored by `store(file:now:)`: hashed as it is
/// read, fsynced, and hard-linked under its name — never read into memory. Blocking: callers run it
/// off the event loops.
public struct AttachmentFiles: Sendable {
    /// The `attachments` directory.
    public let root: String

    /// Why a file operation failed: the call and its `errno`.
    public struct Failure: Error, CustomStringConvertible {
        public var call: String
        public var errno: Int32
        public var description: String { "\(call): \(String(cString: strerror(errno)))" }
    }

    /// The store under `dataDirectory`.
    public init(dataDirectory: String) {
        root = dataDirectory + "/attachments"
    }

    /// Lowercase hex SHA-256 of `bytes`: a file's name.
    public static func name(of bytes: [UInt8]) -> String { Hex.encode(SHA256.hash(bytes)) }

    /// Whether `name` is 64 lowercase hex digits (anything else never reaches a path).
    public static func isName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// The path of the file named `name`.
    public func path(_ name: String) -> String {
        precondition(Self.isName(name), "not a content address")
        return "\(root)/\(Attachment.relativePath(of: name))"
    }

    /// Stores `bytes` under their SHA-256 (returned) with modification time `now` (epoch ms).
    @discardableResult
    public func store(_ bytes: [UInt8], now: Int64) throws(Failure) -> String {
        let name = Self.name(of: bytes)
        let final = path(name)
        let directory = (final as NSString).deletingLastPathComponent
        try makeDirectories(directory)
        if access(final, F_OK) == 0 {
            // Already stored: only its time moves, so the sweep's grace restarts.
            try touch(final, now: now)
            return name
        }
        let temporary = "\(directory)/.tmp-\(Hex.encode(SecureRandom.bytes(8)))"
        do throws(Failure) {
            try Self.writeNew(temporary, bytes, sync: true)
            guard rename(temporary, final) == 0 else { throw Failure(call: "rename \(temporary)", errno: errno) }
        } catch {
            unlink(temporary)
            throw error
        }
        try syncDirectory(directory)
        try touch(final, now: now)
        return name
    }

    /// Stores the file at `path` (an upload's temporary file, in this store's file system) under its
    /// SHA-256 (returned) with modification time `now`: read in chunks to hash it, fsynced, then
    /// hard-linked under its name (the temporary file stays the caller's; a name only ever holds the
    /// whole file, as with `store(_:now:)`). Where hard links are refused (`EXDEV`, `EPERM`), copied.
    @discardableResult
    public func store(file path: String, now: Int64) throws(Failure) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(call: "open \(path)", errno: errno) }
        defer { close(fd) }
        let hasher = SHA256.Hasher()
        try Self.forEachChunk(of: fd, path: path) { hasher.update($0) }
        guard fsync(fd) == 0 else { throw Failure(call: "fsync \(path)", errno: errno) }
        let name = Hex.encode(hasher.finalize())
        let final = self.path(name)
        let directory = (final as NSString).deletingLastPathComponent
        try makeDirectories(directory)
        if link(path, final) != 0 {
            switch errno {
            case EEXIST: break  // already stored (or stored meanwhile by an identical upload): only its time moves
            case EXDEV, EPERM, EMLINK: try copy(fd, from: path, to: final, in: directory)
            default: throw Failure(call: "link \(path)", errno: errno)
            }
        }
        try syncDirectory(directory)
        try touch(final, now: now)
        return name
    }

    /// Calls `body` with the file's bytes from the start, one chunk at a time.
    private static func forEachChunk(of fd: Int32, path: String, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Void)
        throws(Failure)
    {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { chunk.deallocate() }
        var offset: off_t = 0
        while true {
            let n = pread(fd, chunk.baseAddress, chunk.count, offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(call: "pread \(path)", errno: errno)
            }
            if n == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: chunk[..<n]))
            offset += off_t(n)
        }
    }

    /// `store(file:)` where a hard link is refused: a temporary copy in `directory`, fsynced, renamed to `final`.
    private func copy(_ fd: Int32, from path: String, to final: String, in directory: String) throws(Failure) {
        let temporary = "\(directory)/.tmp-\(Hex.encode(SecureRandom.bytes(8)))"
        let out = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw Failure(call: "open \(temporary)", errno: errno) }
        do throws(Failure) {
            try Self.forEachChunk(of: fd, path: path) { (bytes) throws(Failure) in
                var offset = 0
                while offset < bytes.count {
                    let n = write(out, bytes.baseAddress! + offset, bytes.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw Failure(call: "write \(temporary)", errno: errno)
                    }
                    offset += n
                }
            }
            guard fsync(out) == 0 else { throw Failure(call: "fsync \(temporary)", errno: errno) }
            close(out)
            guard rename(temporary, final) == 0 else { throw Failure(call: "rename \(temporary)", errno: errno) }
        } catch {
            close(out)
            unlink(temporary)
            throw error
        }
    }

    /// Writes `bytes` to a new `.tmp-*` file in the root (an upload that arrived in memory, not
    /// streamed), removed when the returned object is released — the same shape a streamed upload has.
    public func stage(_ bytes: [UInt8]) throws(Failure) -> HTTPBodyFile {
        try makeDirectories(root)
        let temporary = "\(root)/.tmp-\(Hex.encode(SecureRandom.bytes(8)))"
        do throws(Failure) {
            try Self.writeNew(temporary, bytes, sync: false)
        } catch {
            unlink(temporary)
            throw error
        }
        return HTTPBodyFile(path: temporary, count: bytes.count) { unlink(temporary) }
    }

    /// Creates `path` (0600; it must not exist) holding `bytes`, fsynced when `sync`. On a failure the
    /// half-written file is left for the caller to unlink.
    private static func writeNew(_ path: String, _ bytes: [UInt8], sync: Bool) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(call: "open \(path)", errno: errno) }
        defer { close(fd) }
        var failure: Failure?
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = Failure(call: "write \(path)", errno: errno)
                    return
                }
                offset += n
            }
        }
        if let failure { throw failure }
        if sync, fsync(fd) != 0 { throw Failure(call: "fsync \(path)", errno: errno) }
    }

    /// The file named `name`, opened for reading, and its length; nil when it is missing. The
    /// descriptor is the caller's (an `HTTPFileRegion` closes it).
    public func openForReading(_ name: String) throws(Failure) -> (descriptor: Int32, length: Int64)? {
        let file = path(name)
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw Failure(call: "open \(file)", errno: errno)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let failure = Failure(call: "fstat \(file)", errno: errno)
            close(fd)
            throw failure
        }
        return (fd, Int64(info.st_size))
    }

    /// Whether the file named `name` exists.
    public func exists(_ name: String) -> Bool { access(path(name), F_OK) == 0 }

    /// The file's size in bytes, or nil when it is missing.
    public func size(_ name: String) -> Int64? {
        var info = stat()
        guard stat(path(name), &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// `count` bytes of the file from `offset` (fewer at its end).
    public func read(_ name: String, offset: Int64 = 0, count: Int) throws(Failure) -> [UInt8] {
        let file = path(name)
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(call: "open \(file)", errno: errno) }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        var failure: Failure?
        bytes.withUnsafeMutableBytes { raw in
            while done < count {
                let n = pread(fd, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = Failure(call: "pread \(file)", errno: errno)
                    return
                }
                if n == 0 { break }
                done += n
            }
        }
        if let failure { throw failure }
        bytes.removeSubrange(done...)
        return bytes
    }

    /// One file (or leftover temporary file) the sweep may look at: its name and modification time (epoch ms).
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var path: String
        public var modifiedMilliseconds: Int64
        /// A `.tmp-*` file a crashed or failed write left behind.
        public var isTemporary: Bool
    }

    /// Every file under the root, in no particular order.
    public func entries() -> [Entry] {
        let manager = FileManager.default
        var found: [Entry] = []
        for first in (try? manager.contentsOfDirectory(atPath: root)) ?? [] {
            if first.hasPrefix(".tmp-") {
                // An upload's temporary file (the transport streams bodies into the root).
                let file = "\(root)/\(first)"
                var info = stat()
                guard stat(file, &info) == 0 else { continue }
                let milliseconds = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
                found.append(Entry(name: first, path: file, modifiedMilliseconds: milliseconds, isTemporary: true))
                continue
            }
            for second in (try? manager.contentsOfDirectory(atPath: "\(root)/\(first)")) ?? [] {
                let directory = "\(root)/\(first)/\(second)"
                for name in (try? manager.contentsOfDirectory(atPath: directory)) ?? [] {
                    let file = "\(directory)/\(name)"
                    var info = stat()
                    guard stat(file, &info) == 0 else { continue }
                    let milliseconds = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
                    found.append(
                        Entry(
                            name: name, path: file, modifiedMilliseconds: milliseconds,
                            isTemporary: name.hasPrefix(".tmp-")))
                }
            }
        }
        return found
    }

    /// Removes the file at `path` (an `Entry`'s); a missing file is not an error.
    public func remove(path: String) throws(Failure) {
        guard unlink(path) == 0 || errno == ENOENT else { throw Failure(call: "unlink \(path)", errno: errno) }
    }

    private func makeDirectories(_ directory: String) throws(Failure) {
        guard access(directory, F_OK) != 0 else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Failure(call: "mkdir \(directory)", errno: errno == 0 ? EIO : errno)
        }
    }

    private func syncDirectory(_ directory: String) throws(Failure) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(call: "open \(directory)", errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(call: "fsync \(directory)", errno: errno) }
    }

    private func touch(_ file: String, now: Int64) throws(Failure) {
        var times = [
            timespec(tv_sec: Int(now / 1000), tv_nsec: Int(now % 1000) * 1_000_000),
            timespec(tv_sec: Int(now / 1000), tv_nsec: Int(now % 1000) * 1_000_000),
        ]
        guard utimensat(AT_FDCWD, file, &times, 0) == 0 else { throw Failure(call: "utimensat \(file)", errno: errno) }
    }
}
