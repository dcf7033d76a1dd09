import Domain
public import Storage

/// How long short-lived records are kept (docs/design.md#retention), and the sweep that deletes what
/// is older. The sweep runs in one write transaction. It deletes bookkeeping rows and documents
/// clients no longer see (alarms soft-deleted a month ago, completions past the log's retention), so
/// it appends nothing to the change log.
public struct RetentionPolicy: Sendable, Equatable {
    /// Failed invite-code attempts (per code, user, IP): the 24 hours — longer than every window.
    public var inviteAttemptsMilliseconds: Int64 = 24 * 3600 * 1000
    /// Failed logins: same reasoning; the login window is 15 minutes.
    public var loginFailuresMilliseconds: Int64 = 24 * 3600 * 1000
    /// Invitations that expired unanswered: 30 days after expiry (docs/design.md#retention).
    public var expiredInvitationsMilliseconds: Int64 = 30 * 24 * 3600 * 1000
    /// Sessions expired or revoked this long ago (kept a while for the audit of who signed in).
    public var deadSessionsMilliseconds: Int64 = 30 * 24 * 3600 * 1000
    /// Soft-deleted shared alarms (with their completions): 30 days (docs/design.md#retention).
    public var deletedAlarmsMilliseconds: Int64 = SharedAlarmStore.retentionAfterDeleteMilliseconds
    /// Personal-alarm tombstones and archived conflict losers: 30 days (data-schema §7.2–7.3).
    public var personalAlarmTombstonesMilliseconds: Int64 = PersonalAlarmRules.tombstoneLifetimeMilliseconds
    /// Completions: the product's completion-log retention, 3 years (docs/design.md#retention).
    public var completionsMilliseconds: Int64 = CompletionStore.retentionMilliseconds
    /// Personal completions: the same 3 years, from the device's `completed_at` (data-schema §8).
    public var personalCompletionsMilliseconds: Int64 = PersonalCompletionRules.retentionMilliseconds
    /// Push devices not registered again for 60 days (data-schema §8; `DeviceRules`).
    public var unseenDevicesMilliseconds: Int64 = DeviceRules.unseenLifetimeMilliseconds
    /// Handled notification-outbox rows (their keys answer "already fired" this long).
    public var handledNotificationsMilliseconds: Int64 = NotificationOutbox.handledRetentionMilliseconds
    /// Mail-outbox rows that left `pending` (sent, failed, unsendable): 30 days, what
    /// `chronir-admin mail list` can still show.
    public var doneMailsMilliseconds: Int64 = 30 * 24 * 3600 * 1000
    /// Mailed tokens (verification, reset) this long after they expired.
    public var expiredEmailTokensMilliseconds: Int64 = 7 * 24 * 3600 * 1000
    /// Used ID-token nonces, once their token expired (docs/sign-in.md): no delay — an expired
    /// token is refused before its nonce is looked at.
    public var expiredNoncesMilliseconds: Int64 = 0
    /// `Idempotency-Key` claims and their stored answers: the 24 hours a key holds its answer.
    public var idempotencyKeysMilliseconds: Int64 = IdempotencyStore.lifetimeMilliseconds

    public init() {}
}

/// What one sweep deleted.
public struct RetentionReport: Sendable, Equatable {
    public var inviteAttempts = 0
    public var loginFailures = 0
    public var expiredInvitations = 0
    public var deadSessions = 0
    public var deletedAlarms = 0
    /// Personal-alarm tombstones and archived conflicts.
    public var personalAlarmTombstones = 0
    public var completions = 0
    /// Personal completions past their 3 years (those of purged tombstones count under `personalAlarmTombstones`).
    public var personalCompletions = 0
    public var unseenDevices = 0
    public var handledNotifications = 0
    public var doneMails = 0
    public var expiredEmailTokens = 0
    /// Used ID-token nonces past their token's expiry.
    public var expiredNonces = 0
    /// `Idempotency-Key` rows past their 24 hours.
    public var idempotencyKeys = 0
    /// Rows deleted in total.
    public var total: Int {
        inviteAttempts + loginFailures + expiredInvitations + deadSessions + deletedAlarms + personalAlarmTombstones
            + completions + personalCompletions + unseenDevices + handledNotifications + doneMails + expiredEmailTokens
            + expiredNonces + idempotencyKeys
    }
}

/// The retention sweep.
public enum Retention {
    /// Deletes records past `policy` at `now`, inside the caller's transaction.
    public static func sweep(policy: RetentionPolicy = RetentionPolicy(), at now: Int64, on db: any SQLConnection) throws
        -> RetentionReport
    {
        var report = RetentionReport()
        report.inviteAttempts = try InviteCodeStore.purgeAttempts(olderThan: now - policy.inviteAttemptsMilliseconds, on: db)
        report.loginFailures = try LoginFailureStore.purge(olderThan: now - policy.loginFailuresMilliseconds, on: db)
        report.expiredInvitations = try InvitationStore.purgeExpired(
            expiredBefore: now - policy.expiredInvitationsMilliseconds, on: db)
        report.deadSessions = try db.run(
            "DELETE FROM sessions WHERE expires_ms < ?1 OR revoked_ms < ?1",
            [.integer(now - policy.deadSessionsMilliseconds)])
        report.deletedAlarms = try SharedAlarmStore.purgeDeleted(
            deletedBefore: now - policy.deletedAlarmsMilliseconds, on: db)
        report.personalAlarmTombstones = try PersonalAlarmStore.purge(
            before: now - policy.personalAlarmTombstonesMilliseconds, on: db)
        report.completions = try CompletionStore.purge(completedBefore: now - policy.completionsMilliseconds, on: db)
        report.personalCompletions = try PersonalCompletionStore.purge(
            completedBefore: now - policy.personalCompletionsMilliseconds, on: db)
        report.unseenDevices = try DeviceStore.purgeUnseen(before: now - policy.unseenDevicesMilliseconds, on: db)
        report.handledNotifications = try NotificationOutbox.purgeHandled(
            before: now - policy.handledNotificationsMilliseconds, on: db)
        report.doneMails = try MailOutbox.purgeDone(before: now - policy.doneMailsMilliseconds, on: db)
        report.expiredEmailTokens = try EmailTokens.purge(expiredBefore: now - policy.expiredEmailTokensMilliseconds, on: db)
        report.expiredNonces = try IdentityStore.purgeNonces(expiredBefore: now - policy.expiredNoncesMilliseconds, on: db)
        report.idempotencyKeys = try IdempotencyStore.purge(before: now - policy.idempotencyKeysMilliseconds, on: db)
        return report
    }
}
