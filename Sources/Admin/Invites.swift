import ArgumentParser
import Domain
import Foundation
import SQLite
import Storage
import Store

/// `chronir-admin invites …`: a group's invite code.
struct Invites: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rotate, disable or unlock a group's invite code.", subcommands: [Rotate.self, Disable.self, Unlock.self])

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or replace the group's invite code and print it once (the old code stops working).",
            discussion: "Needs the server secret (server.secret next to the database). Example: chronir-admin invites rotate 0b9c…")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            let database = try options.openDatabase()
            let groupID = try Groups.find(group, in: database).id
            let secret = try ServerSecret.loadOrCreate(path: options.secretPath)
            let now = options.now
            let (code, record) = try database.writeSync {
                try ServerSecret.checkFingerprint(secret, at: now, on: $0)
                return try InviteCodeStore.adminRotate(groupID: groupID, secret: secret, reason: reason, at: now, on: $0)
            }
            if options.json {
                printJSON(["code": code.text, "expires_at": record.expiresAt.description])
            } else {
                print("code: \(code.text)  (expires \(record.expiresAt); shown once)")
            }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable the group's invite code.", discussion: "Example: chronir-admin invites disable 0b9c… --reason leaked")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            let database = try options.openDatabase()
            let groupID = try Groups.find(group, in: database).id
            let now = options.now
            try database.writeSync { try InviteCodeStore.adminDisable(groupID: groupID, reason: reason, at: now, on: $0) }
            if options.json { printJSON(["disabled": true]) } else { print("invite code disabled") }
        }
    }

    struct Unlock: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Clear the code's lockout and its failed-attempt count.",
            discussion: "Example: chronir-admin invites unlock 0b9c… --reason 'owner mistyped'")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            let database = try options.openDatabase()
            let groupID = try Groups.find(group, in: database).id
            let now = options.now
            let cleared = try database.writeSync {
                try InviteCodeStore.adminUnlock(groupID: groupID, reason: reason, at: now, on: $0)
            }
            if options.json {
                printJSON(["cleared": cleared])
            } else {
                print(cleared ? "lock and failure count cleared" : "nothing to clear")
            }
        }
    }
}

/// `chronir-admin invitations …`
struct Invitations: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and revoke invitations.", subcommands: [List.self, Revoke.self])

    static let header = ["ID", "GROUP", "METHOD", "INVITEE", "ROLE", "STATUS", "EXPIRES"]
    static func row(_ i: Invitation) -> [String] {
        [i.id, i.groupID, i.method.rawValue, i.inviteeEmail ?? "-", i.role.rawValue, i.status.rawValue, i.expiresAt.description]
    }

    struct List: ParsableCommand {
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
            let database = try options.openDatabase()
            let now = options.now
            let invitations = try database.readSync {
                try InvitationStore.moderationList(groupID: group, status: wanted, limit: limit, at: now, on: $0)
            }
            if options.json { printJSON(invitations) } else { printTable(Invitations.header, invitations.map(Invitations.row)) }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke an invitation.", discussion: "Example: chronir-admin invitations revoke 5d1e… --reason spam")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Invitation id.") var id: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            let database = try options.openDatabase()
            let now = options.now
            let invitation = try database.writeSync {
                try InvitationStore.adminRevoke(id: id, reason: reason, at: now, on: $0)
            }
            if options.json { printJSON(invitation) } else { printTable(Invitations.header, [Invitations.row(invitation)]) }
        }
    }
}
