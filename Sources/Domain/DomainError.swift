/// Errors a domain rule can raise. The App maps each case to an HTTP status and the error envelope in
/// one place (`ErrorMapping`); nothing here knows about HTTP.
public enum DomainError: Error, Equatable, Sendable {
    /// A field failed validation; `field` is the JSON field name (snake_case).
    case invalidField(field: String, message: String)
    /// No credentials, or a token that is unknown, expired or revoked.
    case authenticationRequired
    /// Email/password pair did not match (deliberately not saying which).
    case invalidCredentials
    /// The account is suspended by an operator.
    case accountSuspended
    /// The caller may see the resource but lacks the role for this action.
    case permissionDenied(String)
    /// The resource does not exist, or the caller may not know it exists.
    case notFound(String)
    /// The email address is already registered.
    case emailTaken
    /// A mailed token (verification, password reset) that is unknown, used, expired, or for another
    /// purpose — deliberately not saying which.
    case tokenInvalid
    /// The action needs a verified email address (accepting an email invitation).
    case emailNotVerified
    /// The caller named a stale `version`; `current` is the current document as JSON.
    case versionConflict(current: [UInt8])
    /// Too many attempts; retry after the given number of seconds.
    case rateLimited(retryAfterSeconds: Int)
    /// The feature needs a higher tier.
    case tierRequired(String)
    /// The feature needs a tier the account had through a subscription that has lapsed (grace over,
    /// refunded, revoked): `SUBSCRIPTION_EXPIRED` rather than `tierRequired` (docs/subscriptions.md#downgrade).
    case subscriptionExpired(String)
    /// An alarm's schedule, times of day or zone is unusable; `field` is the JSON path of the offending
    /// field (`timezone`, `times_of_day`, `schedule.days_of_month`, …).
    case invalidSchedule(field: String, message: String)
    /// The group already has `max_members` active members.
    case groupMemberLimit
    /// An invite code that cannot be used, for whatever reason (unknown, expired, disabled, locked,
    /// older than the caller's departure): one answer for all, so nothing can be learned from it.
    case inviteCodeInvalid
    /// The invitation is past its expiry (or no longer valid for the caller).
    case invitationExpired
    /// The invitation was already accepted (by someone else) or is otherwise answered.
    case invitationAlreadyAccepted
    /// The owner must transfer ownership before leaving.
    case ownerMustTransfer
    /// No live shared alarm with that id in the group (or the caller may not know it exists), or no
    /// live personal alarm with that id in the caller's account.
    case alarmNotFound
    /// The group already has `SharedAlarmRules.maxAlarmsPerGroup` live shared alarms, or the account
    /// `PersonalAlarmRules.maxAlarmsPerUser` personal ones.
    case alarmLimitReached
    /// An answer for an occurrence that is closed or is not the current one; `current` is the alarm.
    case occurrenceClosed(current: [UInt8])
    /// `archived: true` on an alarm that is not done — it fires again, was switched off or paused past
    /// its last fire, or is still open (docs/design.md#done-and-archived); `current` is the alarm.
    case alarmNotDone(current: [UInt8])
    /// An answer before the occurrence's `answerable_from` (its lead window, or a pause, has not begun);
    /// `current` is the alarm (docs/design.md#occurrence-states).
    case answerTooEarly(answerableFrom: Timestamp, current: [UInt8])
    /// An answer that can no longer be taken back: its withdrawal window has passed, or its occurrence
    /// has moved on (docs/design.md#answers-retries-and-undo); `reason` says which.
    case answerWithdrawalClosed(reason: String)
    /// A live invite code, but the caller's own membership ended (removed, or `left`) after it was
    /// made: only a newer code or invitation admits them again (docs/design.md#roles-and-membership).
    case rejoinNeedsNewInvite(left: Bool)
    /// A new Sign in with Apple/Google identity names the email of an existing account, and the
    /// two may not be linked (docs/sign-in.md#linking): `reason` says which side is not verified,
    /// or that the account already has an identity of that provider.
    case identityLinkRefused(reason: String)
    /// Removing this identity would leave the account no way to sign in (no password, no other identity).
    case lastSignInMethod
    /// The account has no password to change (it signs in with Apple/Google only).
    case passwordNotSet
}
