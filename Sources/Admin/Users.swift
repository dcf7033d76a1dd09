import ArgumentParser
import Domain
import Foundation
import Hashing
import Storage
import Store

/// `chronir-admin users …`
struct Users: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, create and moderate accounts.",
        subcommands: [
            List.self, Show.self, Create.self, SetTier.self, Suspend.self, Unsuspend.self, Delete.self, VerifyEmail.self,
            ResetLink.self, Sessions.self, RevokeSessions.self,
        ])

    static func row(_ u: User) -> [String] {
        [
            u.id, u.email, u.emailVerified ? "yes" : "no", u.displayName, u.tier.rawValue, u.status.rawValue,
            u.createdAt.description,
        ]
    }
    static let header = ["ID", "EMAIL", "VERIFIED", "NAME", "TIER", "STATUS", "CREATED"]

    static func find(_ user: String, in database: any SQLDatabase) throws -> User {
        guard let found = try database.readSync({ try AccountStore.find(user, on: $0) }) else {
            throw AdminError("no user \(user)")
        }
        return found
    }

    /// Looks the account `user` up, asks `question` about it unless `yes` (none: no question),
    /// changes it with `write` and prints the account `write` returns.
    static func update(
        _ user: String, by command: some AdminCommand, confirm question: ((User) -> String)? = nil, yes: Bool = false,
        write: (User, _ now: Int64, any SQLConnection) throws -> User
    ) throws {
        try command.change(
            find: { try Users.find(user, in: $0) }, confirm: question, yes: yes, write: write,
            output: { updated, _ in Users.output(updated) })
    }

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "List accounts.", discussion: "Example: chronir-admin users list --search example.com")
        @OptionGroup var options: AdminOptions
        @Option(help: "Only accounts whose email or name contains this text.") var search: String?
        @Option(help: "At most this many (default 100).") var limit = 100

        func run() throws {
            try inspect(
                read: { try AccountStore.list(search: search, limit: limit, on: $0) },
                output: Users.table)
        }
    }

    struct Show: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one account (by id or email).", discussion: "Example: chronir-admin users show ana@example.com")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String

        func run() throws {
            emit(Users.output(try Users.find(user, in: try options.openDatabase())))
        }
    }

    struct Create: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account (bootstrap).",
            discussion: """
                Prints a generated one-time password, or reads the password from standard input with \
                --password-stdin. Example: chronir-admin users create ops@example.com --name Ops --tier premium
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "Email address.") var email: String
        @Option(help: "Display name (default: the part of the email before @).") var name: String?
        @Option(help: "free|plus|premium (default: free).") var tier = "free"
        @Flag(help: "Read the password from the first line of standard input.") var passwordStdin = false

        func run() throws {
            guard let tier = Tier(rawValue: tier) else { throw AdminError("tier must be free, plus or premium") }
            let normalized = try AccountRules.normalizeEmail(email)
            let displayName = try AccountRules.normalizeDisplayName(name ?? String(normalized.prefix { $0 != "@" }))
            let generated = !passwordStdin
            let password: String
            if passwordStdin {
                guard let line = readLine(strippingNewline: true) else { throw AdminError("no password on standard input") }
                password = line
            } else {
                password = Base64URL.encode(SecureRandom.bytes(12))
            }
            try AccountRules.validatePassword(password)
            let hash = PasswordHash.make(password: password)
            try change(
                write: { now, db in
                    try AccountStore.register(
                        email: normalized, displayName: displayName, passwordHash: hash, tier: tier, at: now, on: db,
                        actor: .admin)
                },
                output: { user in
                    AdminOutput(json: Created(user: user, oneTimePassword: generated ? password : nil)) {
                        Users.output(user).text()
                        if generated { print("one-time password: \(password)") }
                    }
                })
        }
    }

    /// What `users create --json` prints: the account, and the generated password (null when it was
    /// read from standard input) — the only time it is shown.
    struct Created: Encodable {
        var user: User
        @ExplicitNull var oneTimePassword: String?
        enum CodingKeys: String, CodingKey {
            case user
            case oneTimePassword = "one_time_password"
        }
    }

    struct VerifyEmail: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify-email", abstract: "Mark an account's address verified (stands in for the mailed link).",
            discussion: """
                For servers without mail (docs/mail.md#without-mail), or a user whose mail never arrives. Check
                that the person asking controls the address first: a verified address can accept email invitations.
                Example: chronir-admin users verify-email ana@example.com
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String

        func run() throws {
            try Users.update(user, by: self) { target, now, db in
                try AccountStore.markEmailVerified(userID: target.id, actor: .admin, at: now, on: db)
            }
        }
    }

    struct ResetLink: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-link", abstract: "Print a one-use password-reset link (1 hour) for an account.",
            discussion: """
                Stands in for the reset mail on servers without mail (docs/mail.md#without-mail). Give the link only \
                to the account's owner, through a channel you trust: whoever opens it sets the password. \
                Example: chronir-admin users reset-link ana@example.com --public-base-url https://chronir.example.com
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String
        @Option(help: "The server's public base URL. [env: CHRONIR_PUBLIC_BASE_URL]") var publicBaseUrl: String?

        struct Result: Encodable {
            var link: String
            var expiresAt: Timestamp
            enum CodingKeys: String, CodingKey {
                case link
                case expiresAt = "expires_at"
            }
        }

        func run() throws {
            guard let base = publicBaseUrl ?? ProcessInfo.processInfo.environment["CHRONIR_PUBLIC_BASE_URL"], !base.isEmpty else {
                throw AdminError("give --public-base-url (or CHRONIR_PUBLIC_BASE_URL): the link must point at the server's web client")
            }
            let raw = SecureRandom.bytes(32)
            let token = Base64URL.encode(raw)
            let hash = SHA256.hash(raw)
            try change(
                find: { try Users.find(user, in: $0) },
                write: { target, now, db in
                    let expires = now + MailTemplates.resetLifetimeMilliseconds
                    try EmailTokens.issue(
                        .passwordReset, tokenHash: hash, userID: target.id, email: target.email, at: now, expiresAt: expires, on: db)
                    return Result(link: MailTemplates.resetLink(base: base, token: token), expiresAt: Timestamp(milliseconds: expires))
                },
                output: { result, target in
                    .line(result, "reset link for \(target.email) (one use, until \(result.expiresAt)): \(result.link)")
                })
        }
    }

    struct SetTier: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-tier", abstract: "Grant an account a tier (an operator entitlement), or take the grant away.",
            discussion: """
                The account's tier is the highest of this grant and its store subscriptions (docs/subscriptions.md); \
                `free` removes the grant. Example: chronir-admin users set-tier ana@example.com premium \
                --until 2027-01-31 --reason 'paid annual plan'
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String
        @Argument(help: "free|plus|premium.") var tier: String
        @Option(help: "The grant ends at this instant: YYYY-MM-DD (midnight UTC) or an ISO 8601 date-time.") var until: String?
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            guard let tier = Tier(rawValue: tier) else { throw AdminError("tier must be free, plus or premium") }
            let end = try until.map(Users.instant)
            if end != nil, tier == .free { throw AdminError("--until needs plus or premium") }
            try Users.update(user, by: self) { target, now, db in
                if let end, end <= now { throw AdminError("--until is in the past") }
                try EntitlementStore.setOperatorGrant(
                    userID: target.id, tier: tier, until: end, reason: reason, actor: .admin, at: now, on: db)
                return try AccountStore.user(id: target.id, on: db) ?? target
            }
        }
    }

    /// `YYYY-MM-DD` (midnight UTC) or an ISO 8601 date-time, in milliseconds since the epoch.
    static func instant(_ text: String) throws -> Int64 {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        throw AdminError("not a date: \(text) (YYYY-MM-DD or an ISO 8601 date-time)")
    }

    struct Suspend: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Suspend an account: it can no longer sign in and every token is revoked.",
            discussion: "Example: chronir-admin users suspend ana@example.com --reason 'spam' --yes")
        @OptionGroup var options: AdminOptions
        @OptionGroup var moderation: AccountModeration
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() throws {
            try Users.update(moderation.user, by: self, confirm: { "Suspend \($0.email) and revoke all their sessions?" }, yes: yes) {
                target, now, db in
                try AccountStore.setStatus(userID: target.id, status: .suspended, actor: .admin, reason: moderation.reason, at: now, on: db)
            }
        }
    }

    struct Unsuspend: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reinstate a suspended account (it signs in again with its password).",
            discussion: "Example: chronir-admin users unsuspend ana@example.com --reason 'appeal accepted'")
        @OptionGroup var options: AdminOptions
        @OptionGroup var moderation: AccountModeration

        func run() throws {
            try Users.update(moderation.user, by: self) { target, now, db in
                try AccountStore.setStatus(userID: target.id, status: .active, actor: .admin, reason: moderation.reason, at: now, on: db)
            }
        }
    }

    struct Delete: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an account: the same cascade as DELETE /v1/me, in one transaction.",
            discussion: """
                Owned groups pass to the longest-standing admin (else member; else the group is deleted), \
                memberships end, completions stay as "Deleted User", tokens and personal fields are removed. \
                Example: chronir-admin users delete ana@example.com --reason 'GDPR request' --yes
                """)
        @OptionGroup var options: AdminOptions
        @OptionGroup var moderation: AccountModeration
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() throws {
            try change(
                find: { try Users.find(moderation.user, in: $0) },
                confirm: { "Delete the account \($0.email) for good?" }, yes: yes,
                write: { target, now, db in
                    try GroupStore.deleteAccount(userID: target.id, at: now, on: db, actor: .admin, reason: moderation.reason)
                },
                output: { _, target in .line(["deleted_user": target.id], "deleted account \(target.id)") })
        }
    }
}

/// What an account moderation that must give its reason names: the account, and why (recorded in
/// the change log): `users suspend`, `unsuspend` and `delete`.
struct AccountModeration: ParsableArguments {
    @Argument(help: "User id or email.") var user: String
    @Option(help: "Why (required; recorded in the change log).") var reason: String
}

extension AdminCommand {
    /// `inspect` of the account `user` (id or email; "no user …" when there is none), read as of the
    /// command's `now`.
    func inspect<Value>(
        account user: String, read: (User, _ now: Int64, any SQLConnection) throws -> Value, output: (Value) -> AdminOutput
    ) throws {
        let now = options.now
        try inspect(find: { try Users.find(user, in: $0) }, read: { target, db in try read(target, now, db) }, output: output)
    }
}
