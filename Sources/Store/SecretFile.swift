import Foundation

/// A secret kept in a file of the data directory, never in the database (`server.secret`,
/// `vapid.pem`): made on the first start — created exclusively, mode 0600, written and fsynced
/// before it is used — and read on every later one. A file group or others may access is refused:
/// the operator chmods it, nothing is silently regenerated (a new secret would break what the old
/// one protected).
public enum SecretFile {
    /// Why the file cannot be used; the text names `what`, the path and the failing call.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The file's bytes: the existing file's, or `make()`'s written to a new file. `what` names the
    /// secret in errors ("server secret", "VAPID key").
    public static func loadOrCreate(path: String, what: String, make: () -> [UInt8]) throws(Failure) -> [UInt8] {
        func failure(_ text: String) -> Failure { Failure(description: "\(text): \(String(cString: strerror(errno)))") }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let bytes = make()
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd)
            close(fd)
            guard written == bytes.count, synced == 0 else {
                let error = failure("cannot write \(what) \(path)")
                unlink(path)
                throw error
            }
            return bytes
        }
        guard errno == EEXIST else { throw failure("cannot create \(what) \(path)") }
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure("cannot stat \(what) \(path)") }
        guard info.st_mode & 0o077 == 0 else {
            throw Failure(
                description:
                    "\(what) \(path) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw failure("cannot read \(what) \(path)") }
        return [UInt8](data)
    }
}
