import CSQLite
import Glibc

/// Owner-only permissions for a database and its companion files, whatever the
/// process umask and the directory's mode.
///
/// SQLite's unix VFS creates a new database file with `SQLITE_DEFAULT_FILE_PERMISSIONS` (0644) minus
/// the umask, and each `-wal`, `-shm` and `-journal` with the main file's mode (`findCreateFileMode`
/// in os_unix.c, applied with `fchmod`, so the umask does not matter there). So the main file is
/// created here first, exclusively and 0600, before `sqlite3_open_v2` sees it; its companions then
/// follow it. Files left with group/other bits by an older version are narrowed to 0600 at open.
public enum FileProtection {
    /// The mode of every database file: read/write for the owner only.
    public static let fileMode: UInt32 = 0o600

    /// The files SQLite keeps beside a database at `path`.
    public static func companions(of path: String) -> [String] {
        [path + "-wal", path + "-shm", path + "-journal"]
    }

    /// Creates `path` (O_EXCL, 0600) when missing, and narrows it and its existing companions (those
    /// this process may chmod) to owner-only when group or others have any access. Returns the paths
    /// it narrowed. Throws the failing call
    /// with its errno.
    @discardableResult
    public static func prepare(databasePath path: String) throws(SQLiteError) -> [String] {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, fileMode)
        if fd >= 0 {
            // The umask can only have removed bits; make the mode exact (SQLite copies it to companions).
            let changed = fchmod(fd, fileMode)
            let error = errno
            Glibc.close(fd)
            guard changed == 0 else { throw failure("fchmod", path, error) }
        } else if errno != EEXIST {
            throw failure("open", path, errno)
        }
        var narrowed: [String] = []
        for file in [path] + companions(of: path) {
            var info = stat()
            guard lstat(file, &info) == 0 else {
                if errno == ENOENT { continue }
                throw failure("lstat", file, errno)
            }
            // Only the owner (or root) may chmod; another user's file is left as it is.
            guard info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0,
                info.st_uid == geteuid() || geteuid() == 0
            else { continue }
            guard chmod(file, info.st_mode & 0o700) == 0 else { throw failure("chmod", file, errno) }
            narrowed.append(file)
        }
        return narrowed
    }

    static func failure(_ call: String, _ path: String, _ code: Int32) -> SQLiteError {
        SQLiteError(code: SQLITE_CANTOPEN, message: "\(call)(\(path)) failed: \(String(cString: strerror(code))) (errno \(code))")
    }
}
