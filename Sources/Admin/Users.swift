import ArgumentParser
import Domain
import Foundation
import Hashing
import SQLite
import Storage
import Store

/// `chronir-admin users …`
struct Users: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, create and moderate accounts.",
        subcommands: [
            List.self, Show.self, Create.self, SetTier.self, Suspend.self, Unsuspend.self, Delete.self, Sessions.self,
            RevokeSessions.self,
        ])

    static func row(_ u: User) -> [String] {
        [u.id, u.email, u.displayName, u.tier.rawValue, u.status.rawValue, u.createdAt.description]
    }
    static let header = ["ID", "EMAIL", "NAME", "TIER", "STATUS", "CREATED"]

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

    struct SetTier: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-tier", abstract: "Change an account's tier.",
            discussion: "Example: chronir-admin users set-tier ana@example.com premium --reason 'paid annual plan'")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String
        @Argument(help: "free|plus|premium.") var tier: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            guard let tier = Tier(rawValue: tier) else { throw AdminError("tier must be free, plus or premium") }
            try Users.update(user, by: self) { target, now, db in
                try AccountStore.setTier(userID: target.id, tier: tier, actor: .admin, reason: reason, at: now, on: db)
            }
        }
    }

    struct Suspend: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Suspend an account: it can no longer sign in and every token is revoked.",
            discussion: "Example: chronir-admin users suspend ana@example.com --reason 'spam' --yes")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String
        @Option(help: "Why (required; recorded in the change log).") var reason: String
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() throws {
            try Users.update(user, by: self, confirm: { "Suspend \($0.email) and revoke all their sessions?" }, yes: yes) {
                target, now, db in
                try AccountStore.setStatus(userID: target.id, status: .suspended, actor: .admin, reason: reason, at: now, on: db)
            }
        }
    }

    struct Unsuspend: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reinstate a suspended account (it signs in again with its password).",
            discussion: "Example: chronir-admin users unsuspend ana@example.com --reason 'appeal accepted'")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String
        @Option(help: "Why (required; recorded in the change log).") var reason: String

        func run() throws {
            try Users.update(user, by: self) { target, now, db in
                try AccountStore.setStatus(userID: target.id, status: .active, actor: .admin, reason: reason, at: now, on: db)
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
        @Argument(help: "User id or email.") var user: String
        @Option(help: "Why (required; recorded in the change log).") var reason: String
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() throws {
            try change(
                find: { try Users.find(user, in: $0) },
                confirm: { "Delete the account \($0.email) for good?" }, yes: yes,
                write: { target, now, db in
                    try GroupStore.deleteAccount(userID: target.id, at: now, on: db, actor: .admin, reason: reason)
                },
                output: { _, target in .line(["deleted_user": target.id], "deleted account \(target.id)") })
        }
    }
}
