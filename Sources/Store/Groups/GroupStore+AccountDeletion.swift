import Domain
import Foundation
public import Storage

extension GroupStore {
    /// Display name that replaces a deleted account's name everywhere it was cached.
    public static let deletedUserName = "Deleted User"

    /// Deletes an account in the caller's transaction (docs/design.md#account-deletion): each owned
    /// group passes to its longest-standing admin, else its longest-standing member, else is
    /// soft-deleted; every other membership ends as `left`; sessions, Apple/Google identities and
    /// failed-login records are deleted; personal fields are replaced (email → `deleted+<id>@invalid`, name → "Deleted User",
    /// password hash emptied, cached member names too) and `deleted_ms` set; its push devices and Idempotency-Key answers are
    /// deleted, and so are its personal alarms and settings; every attachment it uploaded is marked deleted
    /// (its files go with the orphan sweep, docs/attachments.md#account-deletion); pending invitations it
    /// sent are revoked, those addressed to it lose the address, invite codes it created are disabled;
    /// the address is left nowhere else either (`eraseAddress`). One batch, event
    /// `account_deleted`, by `actor` (default: the user themself; `admin` for chronir-admin, with
    /// `reason`). Throws `notFound("user")` for an unknown or already deleted account.
    public static func deleteAccount(
        userID: String, at now: Int64, on db: any SQLConnection, actor: Actor? = nil, reason: String? = nil
    ) throws {
        guard let user = try AccountStore.user(id: userID, on: db) else { throw DomainError.notFound("user") }
        // Its uploads go first, so the alarm and completion documents below no longer list them.
        var changes = try AttachmentStore.eraseUploads(userID: userID, at: now, on: db)
        let memberships = try db.query(
            "SELECT \(memberColumns) FROM group_members WHERE user_id = ?1 AND status = 'active' ORDER BY joined_ms",
            [.text(userID)]
        ).map(memberFromRow)
        for var membership in memberships {
            guard var group = try group(id: membership.groupID, on: db) else { continue }
            if membership.role == .owner {
                let successor = try activeMembers(groupID: group.id, on: db)
                    .filter { $0.userID != userID }
                    .min { ($0.role == .admin ? 0 : 1, $0.joinedAt, $0.userID) < ($1.role == .admin ? 0 : 1, $1.joinedAt, $1.userID) }
                guard var successor else {
                    changes += try softDelete(group, reason: "account_deleted", at: now, on: db)
                    continue
                }
                changes += try handOver(&group, from: &membership, to: &successor, at: now, on: db)
            }
            membership.displayName = deletedUserName
            changes += try end(&membership, of: &group, as: .left, by: nil, at: now, on: db)
        }
        // Shared completions keep their place in history as "Deleted User" (completed_by_uid null).
        changes += try CompletionStore.anonymise(userID: userID, on: db)

        // Invitations addressed to this email lose the address; pending ones end.
        let tombstone = "deleted+\(userID)@invalid"
        try db.run(
            """
            UPDATE invitations SET status = CASE status WHEN 'pending' THEN 'revoked' ELSE status END,
                responded_ms = CASE status WHEN 'pending' THEN ?3 ELSE responded_ms END, invitee_email = ?2
            WHERE invitee_email = ?1
            """, [.text(user.email), .text(tombstone), .integer(now)])
        try db.run("UPDATE group_members SET display_name = ?2 WHERE user_id = ?1", [.text(userID), .text(deletedUserName)])
        try db.run("DELETE FROM sessions WHERE user_id = ?1", [.text(userID)])
        // Its Apple/Google identities: the provider's account may sign up afresh later (docs/sign-in.md).
        try IdentityStore.deleteAll(userID: userID, on: db)
        try DeviceStore.deleteAll(userID: userID, on: db)
        try IdempotencyStore.deleteAll(userID: userID, on: db)
        // Data-schema §8.1 steps 6–7: store purchases are unbound (the store subscription itself runs on
        // until cancelled in the store; docs/subscriptions.md#account-deletion).
        try EntitlementStore.unbindAll(userID: userID, at: now, on: db)
        try LoginFailureStore.clearAll(email: user.email, on: db)
        try eraseAddress(user.email, of: userID, tombstone: tombstone, on: db)
        try db.run(
            """
            UPDATE users SET email = ?2, display_name = ?3, password_hash = '', timezone = NULL, locale = NULL,
                avatar_url = NULL, last_seen_ms = NULL, version = version + 1, updated_ms = ?4, deleted_ms = ?4
            WHERE id = ?1
            """, [.text(userID), .text(tombstone), .text(deletedUserName), .integer(now)])
        // Links and addressed invitations this account sent stop working (after the tombstone, so
        // their documents carry "Deleted User").
        let sent = try db.query(
            "SELECT id FROM invitations WHERE invited_by = ?1 AND status = 'pending'", [.text(userID)]
        ).compactMap { $0.string("id") }
        for id in sent {
            try db.run(
                "UPDATE invitations SET status = 'revoked', responded_ms = ?2 WHERE id = ?1", [.text(id), .integer(now)])
            if let invitation = try InvitationStore.invitation(id: id, at: now, on: db) {
                changes += try InvitationStore.feedChanges(invitation, op: .modified, on: db)
            }
        }
        // Codes this account created stop working too, as `invite_code_disabled` would.
        let codes = try db.query(
            """
            SELECT c.group_id AS group_id FROM invite_codes c JOIN groups g ON g.id = c.group_id
            WHERE c.created_by = ?1 AND c.disabled_ms IS NULL AND g.deleted_ms IS NULL ORDER BY c.group_id
            """, [.text(userID)]
        ).compactMap { $0.string("group_id") }
        for groupID in codes {
            try db.run("UPDATE invite_codes SET disabled_ms = ?2 WHERE group_id = ?1", [.text(groupID), .integer(now)])
            if let record = try InviteCodeStore.record(groupID: groupID, on: db) { changes.append(InviteCodeStore.change(record)) }
        }
        // Personal alarms and settings are the account's alone: gone, log documents included.
        try PersonalAlarmStore.eraseAll(userID: userID, at: now, on: db)
        // History too: personal data leaves the change log's documents (their rows still chain).
        try ChangeLog.redactPersonalData(
            userID: userID, email: user.email, tombstoneEmail: tombstone, deletedName: deletedUserName, at: now, on: db)
        changes.append(
            Change(
                topic: ChangeLog.userTopic(userID), kind: .user, op: .removed, entityID: userID, document: nil,
                reason: "account_deleted"))
        try ChangeLog.append(
            changes.map { $0.with(reason: reason) }, event: .accountDeleted, actor: actor ?? .user(userID), at: now,
            on: db)
    }

    /// Leaves a deleted account's `email` nowhere outside the tombstoned rows (docs/design.md#account-deletion):
    /// its email tokens (verification, reset, a change's new address) go; so does every mail to the
    /// address or about the account (`mail_outbox`, sent or not — the per-address mail caps start
    /// afresh, and a request for the address now finds no account); another account's stored
    /// Idempotency-Key answer that quotes it (an invitation to it) quotes `tombstone` instead.
    static func eraseAddress(_ email: String, of userID: String, tombstone: String, on db: any SQLConnection) throws {
        try db.run("DELETE FROM email_tokens WHERE user_id = ?1 OR email = ?2", [.text(userID), .text(email)])
        try db.run("DELETE FROM mail_outbox WHERE user_id = ?1 OR recipient = ?2", [.text(userID), .text(email)])
        let needle = Array(email.utf8)
        let contains =
            switch db.dialect {
            case .sqlite: "instr(body, ?1) > 0"
            case .postgres: "position(?1 in body) > 0"
            }
        let rows = try db.query(
            "SELECT user_id, idem_key, body FROM idempotency_keys WHERE body IS NOT NULL AND \(contains)", [.blob(needle)])
        for row in rows {
            guard let owner = row.string("user_id"), let key = row.string("idem_key"), let body = row.blob("body") else { continue }
            let replaced = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: email, with: tombstone).utf8)
            try db.run(
                "UPDATE idempotency_keys SET body = ?3 WHERE user_id = ?1 AND idem_key = ?2",
                [.text(owner), .text(key), .blob(replaced)])
        }
    }
}
