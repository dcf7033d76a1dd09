import Domain
import Foundation
public import Storage

extension ChangeLog {
    /// Erases a deleted account's personal data from the change log's documents, in
    /// the account deletion's transaction, so what the README promises — personal fields tombstoned —
    /// holds for history too. Rows stay (their seq, event, actor and digest still chain; see
    /// `ChangeLogChain`), only their documents change and `redacted_ms` is set.
    ///
    /// In every document that mentions the account (its id or its email), recursively:
    /// - any string equal to the email becomes `tombstoneEmail`;
    /// - the account's own user document (`kind` user, entity = the user) loses `display_name`
    ///   (→ `deletedName`) and `timezone` (→ null);
    /// - an object naming the user as `user_id` (member), `completed_by_uid` (completion) or
    ///   `invited_by` (invitation) gets the matching name field (`display_name`, `completed_by_name`,
    ///   `invited_by_name`) replaced by `deletedName`.
    /// Returns how many rows were redacted. Reads only rows whose document contains the id or the
    /// email (a scan of the retained log: account deletion is rare, and retention bounds the log).
    @discardableResult
    public static func redactPersonalData(
        userID: String, email: String, tombstoneEmail: String, deletedName: String, at now: Int64, on db: any SQLConnection
    ) throws -> Int {
        let contains = { (parameter: String) in db.dialect.position(of: parameter, in: "document") + " > 0" }
        let rows = try db.query(
            """
            SELECT seq, kind, entity_id, document FROM change_log
            WHERE document IS NOT NULL AND (\(contains("?1")) OR \(contains("?2")))
            """, [.text(userID), .text(email)])
        var redacted = 0
        for row in rows {
            guard let seq = row.int("seq"), let text = row.string("document"),
                let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            else { continue }
            let ownDocument = row.string("kind") == ChangeKind.user.rawValue && row.string("entity_id") == userID
            let scrubbed = scrub(
                parsed, userID: userID, email: email, tombstoneEmail: tombstoneEmail, deletedName: deletedName,
                ownDocument: ownDocument)
            guard
                let data = try? JSONSerialization.data(withJSONObject: scrubbed, options: [.sortedKeys, .fragmentsAllowed]),
                let document = String(data: data, encoding: .utf8), document != text
            else { continue }
            try db.run(
                "UPDATE change_log SET document = ?2, redacted_ms = ?3 WHERE seq = ?1",
                [.integer(seq), .text(document), .integer(now)])
            redacted += 1
        }
        return redacted
    }

    /// The name field that goes with each id field naming a person.
    private static let nameFieldByIDField = [
        "user_id": "display_name", "completed_by_uid": "completed_by_name", "invited_by": "invited_by_name",
    ]

    private static func scrub(
        _ value: Any, userID: String, email: String, tombstoneEmail: String, deletedName: String, ownDocument: Bool
    ) -> Any {
        func walk(_ value: Any, top: Bool) -> Any {
            if let text = value as? String { return text == email ? tombstoneEmail : text }
            if let array = value as? [Any] { return array.map { walk($0, top: false) } }
            guard var object = value as? [String: Any] else { return value }
            for (key, child) in object { object[key] = walk(child, top: false) }
            for (idField, nameField) in nameFieldByIDField where object[idField] as? String == userID {
                if object[nameField] != nil { object[nameField] = deletedName }
            }
            if top && ownDocument {
                if object["display_name"] != nil { object["display_name"] = deletedName }
                for field in ["timezone", "locale", "avatar_url", "last_seen_at"] where object[field] != nil { object[field] = NSNull() }
            }
            return object
        }
        return walk(value, top: true)
    }
}
