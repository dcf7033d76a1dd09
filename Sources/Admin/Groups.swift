import ArgumentParser
import Domain
import Foundation
import Storage
import Store

/// `chronir-admin groups …`
struct Groups: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, inspect and moderate groups.",
        subcommands: [List.self, Show.self, Rename.self, Delete.self, Transfer.self, Freeze.self, Unfreeze.self])

    static let header = ["ID", "NAME", "OWNER", "MEMBERS", "CREATED", "FROZEN"]
    static func row(_ g: Group) -> [String] {
        [
            g.id, g.name, g.ownerID, "\(g.memberCount)/\(g.maxMembers)", g.createdAt.description,
            g.frozenAt?.description ?? "-",
        ]
    }

    /// The live group `id`, or a failure that names it. Commands look the group up first so an
    /// unknown id is reported as such; the Store checks again inside the write transaction.
    static func find(_ id: String, in database: any SQLDatabase) throws -> Group {
        do {
            return try database.readSync { try GroupStore.liveGroup(id, on: $0) }
        } catch DomainError.notFound {
            throw AdminError("no group \(id) (unknown or deleted)")
        }
    }

    /// Looks the group `id` up, changes it with `write` (no question asked) and prints the group
    /// `write` returns.
    static func update(
        _ id: String, by command: some AdminCommand, write: (Group, _ now: Int64, any SQLConnection) throws -> Group
    ) throws {
        try command.change(find: { try Groups.find(id, in: $0) }, write: write, output: { updated, _ in Groups.output(updated) })
    }

    /// Freezes or unfreezes `group` and prints it (shared by `freeze` and `unfreeze`).
    static func setFrozen(_ frozen: Bool, group: String, reason: String, by command: some AdminCommand) throws {
        try update(group, by: command) { target, now, db in
            try GroupStore.adminSetFrozen(groupID: target.id, frozen: frozen, reason: reason, at: now, on: db)
        }
    }

    struct Freeze: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Freeze a group: read-only for everyone (members, owner, and this CLI) until unfrozen.",
            discussion: "Example: chronir-admin groups freeze 0b9c… --reason 'under review'")
        @OptionGroup var options: AdminOptions
        @OptionGroup var moderation: GroupModeration

        func run() throws { try Groups.setFrozen(true, group: moderation.group, reason: moderation.reason, by: self) }
    }

    struct Unfreeze: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unfreeze a group.", discussion: "Example: chronir-admin groups unfreeze 0b9c… --reason 'review done'")
        @OptionGroup var options: AdminOptions
        @OptionGroup var moderation: GroupModeration

        func run() throws { try Groups.setFrozen(false, group: moderation.group, reason: moderation.reason, by: self) }
    }

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "List live groups, newest first.",
            discussion: "Example: chronir-admin groups list --owner ana@example.com")
        @OptionGroup var options: AdminOptions
        @Option(help: "Only groups whose name contains this text.") var search: String?
        @Option(help: "Only groups owned by this email.") var owner: String?
        @Option(help: "At most this many (default 100).") var limit = 100

        func run() throws {
            try inspect(
                read: { try GroupStore.moderationList(search: search, ownerEmail: owner, limit: limit, on: $0) },
                output: Groups.table)
        }
    }

    /// What `groups show` prints as JSON.
    struct Report: Encodable {
        var group: Group
        var members: [GroupMember]
        var inviteCode: CodeReport?
        enum CodingKeys: String, CodingKey {
            case group, members
            case inviteCode = "invite_code"
        }
    }

    struct CodeReport: Encodable {
        var createdAt: Timestamp
        var expiresAt: Timestamp
        var disabledAt: Timestamp?
        var recentFailures: Int
        var lockedUntil: Timestamp?
        enum CodingKeys: String, CodingKey {
            case createdAt = "created_at"
            case expiresAt = "expires_at"
            case disabledAt = "disabled_at"
            case recentFailures = "failures_last_hour"
            case lockedUntil = "locked_until"
        }
    }

    struct Show: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a group: members and roles, invite code status (expiry, failed attempts, lock).",
            discussion: "Example: chronir-admin groups show 0b9c…")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String

        func run() throws {
            let now = options.now
            try inspect(
                find: { try Groups.find(group, in: $0) },
                read: { target, db -> Report in
                    let group = try GroupStore.liveGroup(target.id, on: db)
                    let code = try InviteCodeStore.status(groupID: group.id, at: now, on: db)
                    return Report(
                        group: group, members: try GroupStore.activeMembers(groupID: group.id, on: db),
                        inviteCode: code.record.map {
                            CodeReport(
                                createdAt: $0.createdAt, expiresAt: $0.expiresAt, disabledAt: $0.disabledAt,
                                recentFailures: code.recentFailures, lockedUntil: code.lockedUntil)
                        })
                },
                output: { report in AdminOutput(json: report) { Self.printText(report, now: now) } })
        }

        static func printText(_ report: Report, now: Int64) {
            printTable(Groups.header, [Groups.row(report.group)])
            print("")
            printTable(Members.header, report.members.map(Members.row))
            print("")
            if let code = report.inviteCode {
                let state =
                    code.disabledAt != nil
                    ? "disabled"
                    : code.expiresAt.milliseconds <= now
                        ? "expired"
                        : code.lockedUntil != nil ? "locked until \(code.lockedUntil!)" : "live"
                print("invite code: \(state); expires \(code.expiresAt); failed attempts in the last hour: \(code.recentFailures)")
            } else {
                print("invite code: none")
            }
        }
    }

    struct Rename: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rename a group.", discussion: "Example: chronir-admin groups rename 0b9c… 'Flat 4B' --reason 'abusive name'")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Argument(help: "New name.") var name: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            try Groups.update(group, by: self) { target, now, db in
                try GroupStore.adminRename(groupID: target.id, name: name, reason: reason, at: now, on: db)
            }
        }
    }

    struct Delete: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a group (soft delete: every member loses access at once).",
            discussion: "Example: chronir-admin groups delete 0b9c… --reason 'reported spam' --yes")
        @OptionGroup var options: AdminOptions
        @OptionGroup var moderation: GroupModeration
        @Flag(help: "Do not ask for confirmation.") var yes = false
        @Flag(help: "Show what would be deleted and change nothing.") var dryRun = false

        func run() throws {
            try change(
                find: { try Groups.find(moderation.group, in: $0) },
                preview: dryRun
                    ? { .line(["would_delete": $0], "would delete group \($0.id) '\($0.name)' with \($0.memberCount) members") }
                    : nil,
                confirm: { "Delete group '\($0.name)' (\($0.memberCount) members lose access)?" }, yes: yes,
                write: { target, now, db in try GroupStore.adminDelete(groupID: target.id, reason: moderation.reason, at: now, on: db) },
                output: { _, target in .line(["deleted_group": target.id], "deleted group \(target.id)") })
        }
    }

    struct Transfer: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an active member the owner (the old owner becomes admin).",
            discussion: "Example: chronir-admin groups transfer 0b9c… bob@example.com --reason 'owner left the household'")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Argument(help: "New owner: user id or email.") var user: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            try change(
                find: { (groupID: try Groups.find(group, in: $0).id, userID: try Users.find(user, in: $0).id) },
                write: { target, now, db in
                    try GroupStore.adminTransfer(groupID: target.groupID, userID: target.userID, reason: reason, at: now, on: db)
                },
                output: { detail, _ in .table(detail, Members.header, detail.members.map(Members.row)) })
        }
    }
}

/// What a group moderation that must give its reason names: the group, and why (recorded in the
/// change log): `groups freeze`, `unfreeze` and `delete`.
struct GroupModeration: ParsableArguments {
    @Argument(help: "Group id.") var group: String
    @Option(help: "Why (required; recorded in the change log).") var reason: String
}

/// `chronir-admin members …`
struct Members: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and moderate a group's members.", subcommands: [List.self, Remove.self, Role.self])

    static let header = ["USER", "NAME", "ROLE", "STATUS", "JOINED"]
    static func row(_ m: GroupMember) -> [String] {
        [m.userID, m.displayName, m.role.rawValue, m.status.rawValue, m.joinedAt.description]
    }

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Active members of a group with their roles.", discussion: "Example: chronir-admin members list 0b9c…")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String

        func run() throws {
            try inspect(
                find: { try Groups.find(group, in: $0) },
                read: { target, db in try GroupStore.activeMembers(groupID: target.id, on: db) },
                output: Members.table)
        }
    }

    struct Remove: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a member (not the owner: transfer first). Their access ends at once.",
            discussion: "Example: chronir-admin members remove 0b9c… bob@example.com --reason harassment --yes")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Argument(help: "User id or email.") var user: String
        @Option(help: "Why (required; recorded in the change log).") var reason: String
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run() throws {
            try change(
                find: { (groupID: try Groups.find(group, in: $0).id, user: try Users.find(user, in: $0)) },
                confirm: { "Remove \($0.user.email) from group \($0.groupID)?" }, yes: yes,
                write: { target, now, db in
                    try GroupStore.adminRemoveMember(
                        groupID: target.groupID, userID: target.user.id, reason: reason, at: now, on: db)
                },
                output: { member, _ in Members.output(member) })
        }
    }

    struct Role: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a member's role to admin or member.",
            discussion: "Example: chronir-admin members role 0b9c… bob@example.com admin")
        @OptionGroup var options: AdminOptions
        @Argument(help: "Group id.") var group: String
        @Argument(help: "User id or email.") var user: String
        @Argument(help: "admin|member.") var role: String
        @Option(help: "Why (recorded in the change log).") var reason: String?

        func run() throws {
            guard let role = GroupRole(rawValue: role), role != .owner else {
                throw AdminError("role must be admin or member (ownership moves with `groups transfer`)")
            }
            try change(
                find: { (groupID: try Groups.find(group, in: $0).id, userID: try Users.find(user, in: $0).id) },
                write: { target, now, db in
                    try GroupStore.adminChangeRole(
                        groupID: target.groupID, userID: target.userID, role: role, reason: reason, at: now, on: db)
                },
                output: { member, _ in Members.output(member) })
        }
    }
}
