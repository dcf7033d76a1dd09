import Domain
import Foundation
import Storage

/// The attachment files of a database copy (`db backup`; docs/attachments.md#backup-and-restore):
/// every file and thumbnail a live row of the COPY names is copied from the live store
/// (`<data-dir>/attachments`) to `destination` in the same `ab/cd/<sha256>` layout (0700 / 0600).
/// Files are immutable once renamed into place, so a file copied after the database copy is the one
/// its rows name. Reading the names from the copy — not listing the live directory — makes the set
/// exactly the copy's: files uploaded after it are not taken, and one that a row of the copy names but
/// the orphan sweep removed meanwhile (deleted and swept within the copy's few seconds) is reported.
enum AttachmentBackup {
    /// What a copy did.
    struct Outcome: Encodable {
        var files = 0
        var bytes: Int64 = 0
        /// Names a live row of the copy names that the live store no longer has.
        var missing: [String] = []
    }

    /// The content addresses live rows of `db` name (files and thumbnails), sorted and unique.
    static func namedFiles(on db: any SQLConnection) throws -> [String] {
        guard try SchemaCatalog.tableExists("attachments", on: db) else { return [] }  // before migration 0022
        let rows = try db.query(
            """
            SELECT sha256 AS name FROM attachments WHERE deleted_ms IS NULL
            UNION SELECT thumbnail_sha256 AS name FROM attachments WHERE deleted_ms IS NULL
            """, [])
        return Set(rows.compactMap { $0.string("name") }).sorted()
    }

    /// Copies `names` from `store` to `destination` (which must not exist yet).
    static func copy(_ names: [String], from store: String, to destination: String) throws -> Outcome {
        let manager = FileManager.default
        guard !manager.fileExists(atPath: destination) else { throw AdminError("\(destination) already exists") }
        try manager.createDirectory(atPath: destination, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var outcome = Outcome()
        for name in names {
            guard name.utf8.count == 64 else { continue }
            let relative = Attachment.relativePath(of: name)
            let source = "\(store)/\(relative)"
            guard manager.fileExists(atPath: source) else {
                outcome.missing.append(name)
                continue
            }
            let target = "\(destination)/\(relative)"
            try manager.createDirectory(
                atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try manager.copyItem(atPath: source, toPath: target)
            try manager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target)
            outcome.files += 1
            outcome.bytes += (try manager.attributesOfItem(atPath: target)[.size] as? NSNumber)?.int64Value ?? 0
        }
        return outcome
    }
}
