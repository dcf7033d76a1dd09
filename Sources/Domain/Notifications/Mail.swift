/// What a mail is about (docs/mail.md#what-is-mailed): an open set, stored in `mail_outbox.kind`
/// and used as a metrics label.
public struct MailKind: RawRepresentable, Hashable, Sendable, Codable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A verification link for the account's address (registration, resend).
    public static let verifyEmail = MailKind(rawValue: "verify_email")
    /// A verification link for a new address the account asked to change to.
    public static let changeEmail = MailKind(rawValue: "change_email")
    /// The reset mail's subject (also its request row's, queued before the text exists).
    public static let passwordResetSubject = "Reset your Chronir password"

    /// A password-reset link.
    public static let passwordReset = MailKind(rawValue: "password_reset")
    /// "Someone tried to register with your address" (registration without enumeration).
    public static let accountExists = MailKind(rawValue: "account_exists")
    /// An invitation to a group, to the invited address.
    public static let groupInvitation = MailKind(rawValue: "group_invitation")
}

/// One mail as queued: plain text with one link. The text never contains anything a user chose
/// (an invitation names no group and no inviter: a group name is any text, a URL included, and the
/// mail goes to any address the inviter types).
public struct MailContent: Sendable, Equatable {
    public var kind: MailKind
    /// The one recipient (a normalised address).
    public var recipient: String
    /// A fixed subject per kind (never user text: no header injection to think about).
    public var subject: String
    /// Plain text, lines separated by "\n".
    public var body: String
    /// The account it concerns, when there is one.
    public var userID: String?
    /// Not sent after this: the link in it stops working then.
    public var expiresAt: Int64

    public init(kind: MailKind, recipient: String, subject: String, body: String, userID: String?, expiresAt: Int64) {
        self.kind = kind
        self.recipient = recipient
        self.subject = subject
        self.body = body
        self.userID = userID
        self.expiresAt = expiresAt
    }
}

/// The mails the server sends, as pure functions of (recipient, link, now). Links point at pages
/// the web client serves; a token travels in the URL's fragment (`#…`), which browsers never send
/// to a server, so it stays out of access logs and `Referer` headers.
public enum MailTemplates {
    /// How long a verification link works (24 h).
    public static let verificationLifetimeMilliseconds: Int64 = 24 * 3_600_000
    /// How long a password-reset link works (1 h).
    public static let resetLifetimeMilliseconds: Int64 = 3_600_000
    /// How long an informational mail (no token) is worth sending (1 day).
    public static let noticeLifetimeMilliseconds: Int64 = 24 * 3_600_000

    /// `<base>/verify-email#<token>`.
    public static func verificationLink(base: String, token: String) -> String { trimmed(base) + "/verify-email#" + token }
    /// `<base>/reset-password#<token>`.
    public static func resetLink(base: String, token: String) -> String { trimmed(base) + "/reset-password#" + token }

    /// Confirms the address of a new account (or a resend).
    public static func verifyEmail(to recipient: String, userID: String, base: String, token: String, now: Int64) -> MailContent {
        MailContent(
            kind: .verifyEmail, recipient: recipient, subject: "Confirm your email address for Chronir",
            body: """
                Please confirm that this is your email address by opening this link:

                \(verificationLink(base: base, token: token))

                The link works once, for 24 hours. If you did not create a Chronir account, ignore this mail.
                """, userID: userID, expiresAt: now + verificationLifetimeMilliseconds)
    }

    /// Confirms a new address the account asked to change to; the change happens when it is opened.
    public static func changeEmail(to recipient: String, userID: String, base: String, token: String, now: Int64) -> MailContent {
        MailContent(
            kind: .changeEmail, recipient: recipient, subject: "Confirm your new email address for Chronir",
            body: """
                Your Chronir account asked to use this address from now on. Open this link to confirm it:

                \(verificationLink(base: base, token: token))

                The link works once, for 24 hours. Until it is opened the account keeps its old address.
                If you did not ask for this, ignore this mail.
                """, userID: userID, expiresAt: now + verificationLifetimeMilliseconds)
    }

    /// The reset mail's subject (also its request row's, queued before the text exists).
    public static let passwordResetSubject = "Reset your Chronir password"

    /// A password-reset link.
    public static func passwordReset(to recipient: String, userID: String, base: String, token: String, now: Int64) -> MailContent {
        MailContent(
            kind: .passwordReset, recipient: recipient, subject: passwordResetSubject,
            body: """
                Someone (hopefully you) asked to reset the password of the Chronir account with this address.
                Open this link to choose a new password:

                \(resetLink(base: base, token: token))

                The link works once, for 1 hour. Setting a new password signs out every device.
                If you did not ask for this, ignore this mail: your password stays as it is.
                """, userID: userID, expiresAt: now + resetLifetimeMilliseconds)
    }

    /// Tells the owner of an address that someone tried to register with it.
    public static func accountExists(to recipient: String, userID: String, base: String, now: Int64) -> MailContent {
        MailContent(
            kind: .accountExists, recipient: recipient, subject: "Someone tried to register with your address on Chronir",
            body: """
                Someone tried to create a Chronir account with this address, which already has one.
                If it was you, sign in instead, or reset your password here:

                \(trimmed(base))/reset-password

                If it was not you, ignore this mail: nothing has changed.
                """, userID: userID, expiresAt: now + noticeLifetimeMilliseconds)
    }

    /// An invitation for `recipient`, linking to `/invite/{token}` (the app opens it, or the web
    /// client's landing page); accepted after signing in (or registering and verifying this address),
    /// where the group and the inviter are named. Nothing in it comes from the inviter: the server's
    /// own words and its own link only.
    public static func groupInvitation(to recipient: String, base: String, token: String, expiresAt: Int64) -> MailContent {
        MailContent(
            kind: .groupInvitation, recipient: recipient, subject: "You are invited to a group on Chronir",
            body: """
                Someone invited this address to a group on Chronir, the shared-reminders server at the
                address below. Open this link, then sign in (or create an account with this address and
                confirm it) to see the group and who invited you, and to accept or decline:

                \(trimmed(base))/invite/\(token)

                Only an account whose address is confirmed can accept this invitation. If you do not
                know this server, ignore this mail: nothing happens unless you accept.
                """, userID: nil, expiresAt: expiresAt)
    }

    private static func trimmed(_ base: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}

/// How often mails that carry a token may be asked for, per account (docs/mail.md#what-is-mailed): the
/// mails go to an address the account named, so without a limit the API is a mail cannon.
public enum MailLimits {
    /// Verification mails (registration, resend, address change): one a minute…
    public static let verificationBurst = AttemptWindow(maxAttempts: 1, windowMilliseconds: 60_000)
    /// …and 5 a day.
    public static let verificationDaily = AttemptWindow(maxAttempts: 5, windowMilliseconds: 86_400_000)

    /// Invitation mails to one address, from every inviter together: 3 an hour, counted from the
    /// mail outbox (`MailOutbox.createdTimes`), so a stranger's mailbox gets at most this many
    /// whoever invites it; past it the invitation is refused (429) and nothing is created.
    public static let invitationsPerRecipient = AttemptWindow(maxAttempts: 3, windowMilliseconds: 3_600_000)

    /// The longest wait either window asks for, or nil when a mail may be sent now.
    public static func verificationRefusal(issueTimes: [Int64], now: Int64) -> Int? {
        [verificationBurst, verificationDaily].compactMap { window -> Int? in
            if case .refused(let seconds) = window.evaluate(failureTimes: issueTimes, now: now) { return seconds }
            return nil
        }.max()
    }
}
