import ArgumentParser
import Domain
import Foundation
import Storage
import Store

/// `chronir-admin invites …`: a group's invite code.
struct Invites: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rotate, disable or unlock a group's invite code.", subcommands: [Rotate.self, Disable.self, Unlock.self])

    struct Rotate: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or replace the group's invite code and print it once (the old code stops working).",
            discussion: "Needs the server secret (server.secret next to the database). Example: chronir-admin invites rotate 0b9c…")
        @OptionGroup var options: AdminOptions
        @OptionGroup var target: InviteCodeTarget

        func run() throws {
            try change(
                find: {
                    (groupID: try Groups.find(target.group, in: $0).id, secret: try ServerSecret.loadOrCreate(path: options.secretPath))
                },
                write: { found, now, db in
                    try ServerSecret.checkFingerprint(found.secret, at: now, on: db)
                    return try InviteCodeStore.adminRotate(
                        groupID: found.groupID, secret: found.secret, reason: target.reason, at: now, on: db)
                },
                output: { rotated, _ in
                    let (code, record) = rotated
                    return .line(
                        ["code": code.text, "expires_at": record.expiresAt.description],
                        "code: \(code.text)  (expires \(record.expiresAt); shown once)")
                })
        }
    }

    struct Disable: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable the group's invite code.", discussion: "Example: chronir-admin invites disable 0b9c… --reason leaked")
        @OptionGroup var options: AdminOptions
        @OptionGroup var target: InviteCodeTarget

        func run() throws {
            try change(
                find: { try Groups.find(target.group, in: $0) },
                write: { found, now, db in try InviteCodeStore.adminDisable(groupID: found.id, reason: target.reason, at: now, on: db) },
                output: { _, _ in .line(["disabled": true], "invite code disabled") })
        }
    }

    struct Unlock: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Clear the code's lockout and its failed-attempt count.",
            discussion: "Example: chronir-admin invites unlock 0b9c… --reason 'owner mistyped'")
        @OptionGroup var options: AdminOptions
        @OptionGroup var target: InviteCodeTarget

        func run() throws {
            try change(
                find: { try Groups.find(target.group, in: $0) },
                write: { found, now, db in try InviteCodeStore.adminUnlock(groupID: found.id, reason: target.reason, at: now, on: db) },
                output: { cleared, _ in .line(["cleared": cleared], cleared ? "lock and failure count cleared" : "nothing to clear") })
        }
    }
}

/// What every invite-code change names: the group, and why (recorded in the change log).
struct InviteCodeTarget: ParsableArguments {
    @Argument(help: "Group id.") var group: String
    @Option(help: "Why (recorded in the change log).") var reason: String?
}

/// `chronir-admin invitations …`
struct Invitations: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and revoke invitations.", subcommands: [List.self, Revoke.self])

    static let header = ["ID", "GROUP", "METHOD", "INVITEE", "ROLE", "STATUS", "EXPIRES"]
    static func row(_ i: Invitation) -> [String] {
        [i.id, i.groupID, i.method.rawValue, i.inviteeEmail ?? "-", i.role.rawValue, i.status.rawValue, i.expiresAt.description]
    }

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Invitations, newest first.", discussion: "Example: chronir-admin invitations list --status pending")
        @OptionGroup var options: AdminOptions
        @Option(help: "Only this group's.") var group: String?
        @Option(help: "pending|accepted|declined|expired|revoked.") var status: String?
        @Option(help: "At most this many (default 100).") var limit = 100

        func run() throws {
            var wanted: Invitation.Status?
            if let status {
                guard let parsed = Invitation.Status(rawValue: status) else { throw AdminError("unknown status \(status)") }
                wanted = parsed
            }
            let now = options.now
            try inspect(
                read: { try InvitationStore.moderationList(groupID: group, status: wanted, limit: limit, at: now, on: $0) },
                output: Invitations.table)
        }
    }

    struct Revoke: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an invitation.", discussion: "Example: chronir-admin invitations revoke 5d1e… --reason spam")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Invitation id.") var id: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            try change(
                write: { now, db in try InvitationStore.adminRevoke(id: id, reason: reason, at: now, on: db) },
                output: Invitations.output)
        }
    }
}
