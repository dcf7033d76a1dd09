import CSQLite
import Glibc

extension SQLiteConnection {
    /// Copies this connection's `main` database into a new file at `destinationPath` with SQLite's
    /// online backup API (`sqlite3_backup_*`), in one step so the copy is one consistent snapshot —
    /// safe while other connections (another process included) keep writing in WAL mode. The
    /// destination must not exist. The copy is left in rollback-journal mode (one self-contained file).
    public func backup(to destinationPath: String) throws(SQLiteError) {
        // sqlite3_open_v2 ignores SQLITE_OPEN_EXCLUSIVE, so claim the name with O_EXCL first: a backup
        // never overwrites an existing file.
        let claimed = open(destinationPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard claimed >= 0 else {
            throw SQLiteError(
                code: SQLITE_CANTOPEN,
                message: "cannot create backup \(destinationPath): \(String(cString: strerror(errno)))")
        }
        Glibc.close(claimed)
        do {
            try copy(into: destinationPath)
        } catch {
            unlink(destinationPath)  // no half-written copy left behind
            throw error
        }
    }

    private func copy(into destinationPath: String) throws(SQLiteError) {
        var destination: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let opened = sqlite3_open_v2(destinationPath, &destination, flags, nil)
        guard opened == SQLITE_OK, let destination else {
            let message = destination.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(opened))
            sqlite3_close_v2(destination)
            throw SQLiteError(code: opened, message: "\(message) (creating backup \(destinationPath))")
        }
        defer { sqlite3_close_v2(destination) }
        guard let backup = sqlite3_backup_init(destination, "main", try openHandle("backup"), "main") else {
            throw SQLiteError(
                code: sqlite3_extended_errcode(destination),
                message: "backup could not start: \(String(cString: sqlite3_errmsg(destination)))")
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            let code = stepped == SQLITE_DONE ? finished : stepped
            throw SQLiteError(code: code, message: "backup failed: \(String(cString: sqlite3_errstr(code)))")
        }
    }
}
