import ArgumentParser
import Domain
import Foundation
import Logging
import Postgres
import SQLite
import Storage
import Store

/// `chronir-admin db …`
struct DB: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "SQLiteDatabase maintenance: migrate, status, check, backup, compact.",
        subcommands: [Migrate.self, Status.self, Check.self, Backup.self, Compact.self])

    /// What `db compact` did.
    struct CompactReport: Encodable {
        var rowsRemoved: Int
        var compactedThroughSeq: Int64?
        var rowsBefore: Int64
        var rowsAfter: Int64
        var documentBytesBefore: Int64
        var documentBytesAfter: Int64
        enum CodingKeys: String, CodingKey {
            case rowsRemoved = "rows_removed", compactedThroughSeq = "compacted_through_seq", rowsBefore = "rows_before"
            case rowsAfter = "rows_after", documentBytesBefore = "document_bytes_before"
            case documentBytesAfter = "document_bytes_after"
        }
    }

    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compact the change log now, as the server's sweeper does every 10 minutes (safe while it runs).",
            discussion: """
                Deletes whole batches older than the window, always keeping the newest rows, and appends a checkpoint
                row so `audit verify` still verifies the chain. Clients resuming from before the oldest kept row get a
                reset snapshot. Example: chronir-admin db compact --window-days 30 --keep 10000
                """)
        @OptionGroup var options: AdminOptions
        @Option(help: "Keep rows younger than this many days.") var windowDays = 30
        @Option(help: "Always keep at least this many newest rows (at least 1).") var keep: Int64 = 10_000

        func run() throws {
            guard windowDays >= 0, keep >= 0 else { throw AdminError("--window-days and --keep must be ≥ 0") }
            let database = try options.openDatabase()
            // By hand, any amount is worth removing (no floor): the loop stops at the retention bound.
            let retention = ChangeLogRetention(
                windowMilliseconds: Int64(windowDays) * 24 * 3600 * 1000, minimumRows: keep, minimumRowsPerCompaction: 1)
            let before = try database.readSync { try ChangeLog.size(on: $0) }
            let now = options.now
            let done = try ChangeLog.compactUntilDone(retention, at: now, database: database)
            let removed = done.rowsRemoved
            let through = done.throughSeq
            let after = try database.readSync { try ChangeLog.size(on: $0) }
            let report = CompactReport(
                rowsRemoved: removed, compactedThroughSeq: through, rowsBefore: before.rows, rowsAfter: after.rows,
                documentBytesBefore: before.documentBytes, documentBytesAfter: after.documentBytes)
            if options.json {
                printJSON(report)
            } else {
                print(
                    "removed \(removed) rows\(through.map { " (through seq \($0))" } ?? ""): \(before.rows) → \(after.rows) rows, "
                        + "\(before.documentBytes) → \(after.documentBytes) document bytes")
            }
        }
    }

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the database if missing and apply pending migrations.",
            discussion: "Example: chronir-admin db migrate --data-dir /var/lib/chronir")
        @OptionGroup var options: AdminOptions

        func run() throws {
            let database: any SQLDatabase
            if let url = options.postgresURL {
                database = try PostgresDatabase(url: url, options: PostgresConfiguration(readerCount: 1, concurrentWriterCount: 0))
            } else {
                let path = options.databasePath
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
                database = try SQLiteDatabase(path: path)
            }
            let applied = try MigrationRunner.migrate(
                database, migrations: Schema.migrations(for: database.dialect), nowMilliseconds: options.now)
            if options.json {
                printJSON(["applied": applied])
            } else {
                print(applied.isEmpty ? "up to date" : "applied: \(applied.joined(separator: ", "))")
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Applied migrations with their checksums, and what is pending.")
        @OptionGroup var options: AdminOptions

        func run() throws {
            let database = try options.openDatabase(requireCurrentSchema: false)
            let rows = try database.readSync {
                try $0.query("SELECT name, checksum, applied_ms FROM schema_migrations ORDER BY name")
            }
            let migrations = Schema.migrations(for: database.dialect)
            let pending = try MigrationRunner.pending(database, migrations: migrations)
            let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.name, $0.checksum) })
            let table =
                rows.map { row -> [String] in
                    let name = row.string("name") ?? ""
                    let checksum = row.string("checksum") ?? ""
                    let state = known[name] == nil ? "unknown to this binary" : known[name] == checksum ? "ok" : "CHANGED"
                    return [name, String(checksum.prefix(16)), Timestamp.format(row.int("applied_ms") ?? 0), state]
                } + pending.map { [$0, String(known[$0]?.prefix(16) ?? ""), "-", "pending"] }
            if options.json {
                printJSON(table.map { ["name": $0[0], "checksum": $0[1], "applied_at": $0[2], "state": $0[3]] })
            } else {
                printTable(["MIGRATION", "SHA-256", "APPLIED", "STATE"], table)
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "PRAGMA integrity_check and foreign_key_check; exit 1 on any problem.")
        @OptionGroup var options: AdminOptions

        func run() throws {
            let database = try options.openSQLite(
                orOnPostgres: "PostgreSQL enforces foreign keys itself; use amcheck (`CREATE EXTENSION amcheck`) for index integrity")
            let (integrity, foreignKeys) = try database.readSync { db in
                (
                    try db.query("PRAGMA integrity_check").compactMap { $0.string("integrity_check") },
                    try db.query("PRAGMA foreign_key_check").map { row in
                        "\(row.string("table") ?? "?") row \(row.int("rowid").map(String.init) ?? "?") → \(row.string("parent") ?? "?")"
                    }
                )
            }
            let ok = integrity == ["ok"] && foreignKeys.isEmpty
            if options.json {
                printJSON(CheckReport(ok: ok, integrityCheck: integrity, foreignKeyCheck: foreignKeys))
            } else {
                print("integrity_check: \(integrity.joined(separator: "; "))")
                print("foreign_key_check: \(foreignKeys.isEmpty ? "ok" : foreignKeys.joined(separator: "; "))")
            }
            if !ok { throw ExitCode(1) }
        }
    }

    /// What `db check --json` prints.
    struct CheckReport: Encodable {
        var ok: Bool
        var integrityCheck: [String]
        var foreignKeyCheck: [String]
        enum CodingKeys: String, CodingKey {
            case ok
            case integrityCheck = "integrity_check"
            case foreignKeyCheck = "foreign_key_check"
        }
    }

    /// What `db backup --json` prints.
    struct BackupReport: Encodable {
        var path: String
        var bytes: Int
        var integrity: String
        /// The copy's new log epoch (nil: a schema before migration 0006).
        var epoch: String?
        /// Where the copy's attachment files went (nil with `--no-attachments`), and how many.
        var attachments: String?
        var attachmentFiles: Int?
        var attachmentBytes: Int64?
        enum CodingKeys: String, CodingKey {
            case path, bytes, integrity, epoch, attachments
            case attachmentFiles = "attachment_files"
            case attachmentBytes = "attachment_bytes"
        }
    }

    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the database to a new file with SQLite's online backup API (safe while the server writes).",
            discussion: """
                Then copies the attachment files the copy's live rows name (docs/attachments.md#backup-and-restore) to \
                --attachments (default: DESTINATION.attachments). Example: chronir-admin db backup /var/backups/chronir-$(date +%F).sqlite
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "Destination file (must not exist).") var destination: String
        @Option(help: "Directory for the attachment files (must not exist; default: DESTINATION.attachments).")
        var attachments: String?
        @Flag(help: "Copy the database only, not the attachment files.") var noAttachments = false

        func run() throws {
            guard !FileManager.default.fileExists(atPath: destination) else {
                throw AdminError("\(destination) already exists")
            }
            let attachmentsTarget = attachments ?? destination + ".attachments"
            guard noAttachments || !FileManager.default.fileExists(atPath: attachmentsTarget) else {
                throw AdminError("\(attachmentsTarget) already exists")
            }
            let database = try options.openSQLite(
                orOnPostgres: "back up with pg_dump (docs/operations.md#postgresql)")
            try database.backup(to: destination)
            let copy = try SQLiteDatabase(path: destination, options: SQLiteConfiguration(readerCount: 1))
            // The copy starts a new history: a restore from it must not continue the live log's seqs.
            let epoch = try copy.writeSync { db in try LogEpoch.rotate(on: db) }
            let integrity = try copy.readSync { try $0.scalar("PRAGMA integrity_check") }
            let names = noAttachments ? [] : try copy.readSync { try AttachmentBackup.namedFiles(on: $0) }
            copy.close()
            guard integrity == .text("ok") else { throw AdminError("the copy failed integrity_check: \(integrity)") }
            // After the database copy: every file its live rows name was complete before their rows committed.
            var files: (String, AttachmentBackup.Outcome)?
            if !noAttachments {
                let target = attachmentsTarget
                let store = (options.databasePath as NSString).deletingLastPathComponent + "/attachments"
                let outcome = try AttachmentBackup.copy(names, from: store, to: target)
                guard outcome.missing.isEmpty else {
                    throw AdminError(
                        "\(outcome.missing.count) attachment files named by the copy are missing from \(store) "
                            + "(first: \(outcome.missing[0])); run the backup again")
                }
                files = (target, outcome)
            }
            let size = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) ?? 0
            if options.json {
                printJSON(
                    BackupReport(
                        path: destination, bytes: size, integrity: "ok", epoch: epoch, attachments: files?.0,
                        attachmentFiles: files?.1.files, attachmentBytes: files?.1.bytes))
            } else {
                print("backed up to \(destination) (\(size) bytes, integrity ok, log epoch \(epoch ?? "none: schema before 0006"))")
                if let (path, outcome) = files {
                    print("attachments: \(outcome.files) files, \(outcome.bytes) bytes to \(path)")
                }
            }
        }
    }
}
