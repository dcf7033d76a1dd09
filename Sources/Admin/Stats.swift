import ArgumentParser
import Foundation
import Storage
import Store

/// `chronir-admin stats`
struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            """
            Counts: users, groups, members, alarms, open occurrences, completions, attachments and their bytes; the change log's rows, \
            oldest and latest seq and document bytes; database and WAL size; files and bytes under the data directory's attachments/.
            """
    )
    @OptionGroup var options: AdminOptions

    func run() throws {
        let database = try options.openDatabase()
        let counts = try database.readSync { db -> [(String, Int64)] in
            let queries: [(String, String)] = [
                ("users", "SELECT count(*) FROM users WHERE deleted_ms IS NULL"),
                ("suspended_users", "SELECT count(*) FROM users WHERE status = 'suspended' AND deleted_ms IS NULL"),
                ("groups", "SELECT count(*) FROM groups WHERE deleted_ms IS NULL"),
                ("active_members", "SELECT count(*) FROM group_members WHERE status = 'active'"),
                ("pending_invitations", "SELECT count(*) FROM invitations WHERE status = 'pending'"),
                ("frozen_groups", "SELECT count(*) FROM groups WHERE frozen_ms IS NOT NULL AND deleted_ms IS NULL"),
                ("shared_alarms", "SELECT count(*) FROM shared_alarms WHERE deleted_ms IS NULL"),
                ("open_occurrences", "SELECT count(*) FROM shared_alarms WHERE deleted_ms IS NULL AND open_ms IS NOT NULL"),
                ("completions", "SELECT count(*) FROM shared_completions"),
                ("live_sessions", "SELECT count(*) FROM sessions WHERE revoked_ms IS NULL"),
                ("attachments", "SELECT count(*) FROM attachments WHERE deleted_ms IS NULL"),
                // What the live rows name, counting shared content once per row (the files below count it once).
                ("attachment_bytes", "SELECT CAST(coalesce(sum(size_bytes), 0) AS BIGINT) FROM attachments WHERE deleted_ms IS NULL"),
            ]
            let log = try ChangeLog.size(on: db)
            return try queries.map { name, sql in
                guard case .integer(let n) = try db.scalar(sql) else { return (name, 0) }
                return (name, n)
            } + [
                ("change_log_rows", log.rows), ("change_log_oldest_seq", log.oldestSeq ?? 0),
                ("change_log_latest_seq", log.latestSeq), ("change_log_document_bytes", log.documentBytes),
            ]
        }
        func size(_ path: String) -> Int64 {
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0
        }
        // The content-addressed store (docs/attachments.md#storage): every file, thumbnails and not yet swept ones included.
        var files: Int64 = 0
        var fileBytes: Int64 = 0
        let store = (options.databasePath as NSString).deletingLastPathComponent + "/attachments"
        if let walker = FileManager.default.enumerator(atPath: store) {
            while walker.nextObject() != nil {
                guard walker.fileAttributes?[.type] as? FileAttributeType == .typeRegular else { continue }
                files += 1
                fileBytes += (walker.fileAttributes?[.size] as? Int64) ?? 0
            }
        }
        let all =
            counts + [
                ("database_bytes", size(options.databasePath)), ("wal_bytes", size(options.databasePath + "-wal")),
                ("attachment_files", files), ("attachment_file_bytes", fileBytes),
            ]
        if options.json {
            print("{" + all.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
        } else {
            printTable(["WHAT", "COUNT"], all.map { [$0.0, String($0.1)] })
        }
    }
}
