import ArgumentParser
import Domain
import Foundation
import Storage
import Store
import Wire

/// `chronir-admin users sessions|revoke-sessions`: an account's signed-in sessions, and
/// signing them out. A revocation is one `sessions_revoked` change-log batch (`SessionStore.revoke`
/// / `revokeAll`), so a running server's realtime feed reads it like its own commits and closes
/// those sessions' sockets with 4003; their tokens get 401 on the next request.
extension Users {
    /// One session as `users sessions` prints it: the stored client address in full (an operator
    /// reads the database anyway) and the coarse network its user is shown.
    struct SessionRow: Encodable {
        var id: String
        var createdAt: Timestamp
        var lastUsedAt: Timestamp
        var expiresAt: Timestamp
        @ExplicitNull var userAgent: String?
        @ExplicitNull var clientIP: String?
        @ExplicitNull var network: String?
        enum CodingKeys: String, CodingKey {
            case id, network
            case createdAt = "created_at"
            case lastUsedAt = "last_used_at"
            case expiresAt = "expires_at"
            case userAgent = "user_agent"
            case clientIP = "client_ip"
        }

        init(_ record: SessionStore.Record) {
            id = record.id
            createdAt = Timestamp(milliseconds: record.createdAt)
            lastUsedAt = Timestamp(milliseconds: record.lastUsedAt)
            expiresAt = Timestamp(milliseconds: record.expiresAt)
            userAgent = record.userAgent
            clientIP = record.clientIP
            network = record.network
        }
    }

    struct Sessions: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an account's live sessions, most recently used first.",
            discussion: "Example: chronir-admin users sessions ana@example.com")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String

        func run() throws {
            try inspect(
                account: user, read: { target, now, db in try SessionStore.live(userID: target.id, at: now, on: db).map(SessionRow.init) },
                output: { rows in
                    .table(
                        rows, ["SESSION", "CREATED", "LAST USED", "CLIENT", "USER AGENT"],
                        rows.map { [$0.id, $0.createdAt.description, $0.lastUsedAt.description, $0.clientIP ?? "-", $0.userAgent ?? "-"] })
                })
        }
    }

    /// What `users revoke-sessions` prints.
    struct Revoked: Encodable {
        var user: String
        var revoked: Int
    }

    struct RevokeSessions: AdminCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-sessions",
            abstract: "Sign an account out everywhere (or out of one session with --session).",
            discussion: """
                Every token of the account stops working and a running server closes their realtime sockets \
                (4003); the password stays. Example: chronir-admin users revoke-sessions ana@example.com \
                --reason 'lost phone' --yes
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String
        @Option(help: "Only this session (its id from `users sessions`).") var session: String?
        @Option(help: "Why (recorded in the change log; default: operator).") var reason: String?
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() throws {
            let why = reason.map(SessionStore.RevocationReason.init(rawValue:)) ?? .operatorRevoked
            try change(
                find: { try Users.find(user, in: $0) },
                confirm: { target in
                    session.map { "Sign \(target.email) out of session \($0)?" } ?? "Sign \(target.email) out of every session?"
                }, yes: yes,
                write: { target, now, db -> Int in
                    guard let session else {
                        return try SessionStore.revokeAll(
                            userID: target.id, keeping: nil, actor: .admin, reason: why, at: now, on: db)
                    }
                    guard
                        try SessionStore.revoke(
                            sessionID: session, userID: target.id, actor: .admin, reason: why, at: now, on: db)
                    else { throw AdminError("no live session \(session) of \(target.email)") }
                    return 1
                },
                output: { count, target in
                    .line(Revoked(user: target.id, revoked: count), "revoked \(count) session(s) of \(target.email)")
                })
        }
    }
}
