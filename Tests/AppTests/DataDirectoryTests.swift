import Foundation
import Logging
import SQLite
import Storage
import Store
import TestSupport
import Testing

@testable import App

/// the database, its `-wal`/`-shm`, `server.secret` and backups are 0600 whatever the
/// data directory's mode and the umask; a group/world-writable data directory stops start-up.
@Suite("Data directory and file modes", .serialized)
struct DataDirectoryTests {
    static func mode(_ path: String) -> UInt32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt32(info.st_mode & 0o7777)
    }

    /// Runs `body` with the usual 022 umask (the one that made 0644 files), restoring the old one.
    static func withUmask022<T>(_ body: () throws -> T) rethrows -> T {
        let old = umask(0o022)
        defer { umask(old) }
        return try body()
    }

    static func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    @Test("an existing 0755 data directory: database, -wal, -shm, server.secret and a backup are all 0600")
    func filesAreOwnerOnly() throws {
        let root = TemporaryDirectory(prefix: "datadir")
        let data = root.file(named: "data")
        #expect(mkdir(data, 0o755) == 0)
        #expect(chmod(data, 0o755) == 0)
        let config = AppConfiguration(dataDirectory: data, publicDirectory: nil)
        let database = try Self.withUmask022 {
            try Bootstrap.openDatabase(config: config, logger: Self.quietLogger(), nowMilliseconds: 0)
        }
        _ = try Self.withUmask022 { try ServerSecret.loadOrCreate(path: config.secretPath) }
        try database.writeSync { try $0.run("CREATE TABLE IF NOT EXISTS t (x)") }
        let backup = root.file(named: "backup.sqlite")
        try Self.withUmask022 { try (database as! SQLiteDatabase).backup(to: backup) }
        for file in [config.databasePath, config.databasePath + "-wal", config.databasePath + "-shm", config.secretPath, backup] {
            #expect(Self.mode(file) == 0o600, "\(file) has mode \(String(Self.mode(file) ?? 0, radix: 8))")
        }
        database.close()
    }

    @Test(
        "on PostgreSQL the data directory (it holds server.secret) is created 0700 too",
        .enabled(if: PostgresServer.isAvailable))
    func dataDirectoryOnPostgres() throws {
        let root = TemporaryDirectory(prefix: "datadir-pg")
        let data = root.file(named: "data")
        var config = AppConfiguration(dataDirectory: data, publicDirectory: nil)
        config.databaseURL = try PostgresServer.freshDatabaseURL()
        let database = try Bootstrap.openDatabase(config: config, logger: Self.quietLogger(), nowMilliseconds: 0)
        defer { database.close() }
        #expect(Self.mode(data) == 0o700)
        _ = try ServerSecret.loadOrCreate(path: config.secretPath)
        #expect(Self.mode(config.secretPath) == 0o600)
    }

    @Test("files left 0644 by an older version are narrowed to 0600 at open, and reported")
    func existingFilesNarrowed() throws {
        let directory = TemporaryDirectory(prefix: "narrow")
        let path = directory.file(named: "chronir.sqlite")
        let first = try SQLiteDatabase(path: path)
        try first.writeSync { try $0.run("CREATE TABLE t (x)") }
        #expect(chmod(path, 0o644) == 0)
        #expect(chmod(path + "-wal", 0o644) == 0)
        let second = try SQLiteDatabase(path: path)
        #expect(Set(second.narrowedFiles) == [path, path + "-wal"])
        #expect(Self.mode(path) == 0o600)
        #expect(Self.mode(path + "-wal") == 0o600)
        second.close()
        first.close()
    }

    @Test("a group- or world-writable data directory refuses to start with a clear error")
    func writableDirectoryRefused() throws {
        let root = TemporaryDirectory(prefix: "datadir")
        for mode: mode_t in [0o777, 0o770, 0o702] {
            let data = root.file(named: "data-\(String(mode, radix: 8))")
            #expect(mkdir(data, 0o700) == 0)
            #expect(chmod(data, mode) == 0)
            let config = AppConfiguration(dataDirectory: data, publicDirectory: nil)
            do {
                _ = try Bootstrap.openDatabase(config: config, logger: Self.quietLogger(), nowMilliseconds: 0)
                Issue.record("started on a \(String(mode, radix: 8)) data directory")
            } catch let failure as Bootstrap.Failure {
                #expect(failure.description.contains("writable by group or others"))
                #expect(failure.description.contains("chmod 700 \(data)"))
            }
            #expect(!FileManager.default.fileExists(atPath: config.databasePath))
        }
    }

    @Test("modes: 0700 is owner-only, 0755 and 0750 are readable (a warning), 0775 refused")
    func classification() throws {
        let root = TemporaryDirectory(prefix: "datadir")
        #expect(try Bootstrap.checkDataDirectory(root.path) == .ownerOnly)
        #expect(chmod(root.path, 0o755) == 0)
        #expect(try Bootstrap.checkDataDirectory(root.path) == .readableByOthers(mode: 0o755))
        #expect(chmod(root.path, 0o750) == 0)
        #expect(try Bootstrap.checkDataDirectory(root.path) == .readableByOthers(mode: 0o750))
        #expect(chmod(root.path, 0o775) == 0)
        #expect(throws: Bootstrap.Failure.self) { try Bootstrap.checkDataDirectory(root.path) }
        #expect(chmod(root.path, 0o700) == 0)
    }
}
