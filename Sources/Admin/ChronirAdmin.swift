import ArgumentParser

/// `chronir-admin`: moderate a Chronir server's data without SQL, live: it works on the same
/// database file as a running server, through the same Store code as the HTTP API, and every change
/// it makes is a change-log batch attributed to `admin` (with the `--reason` given).
@main
struct ChronirAdmin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chronir-admin",
        abstract: "Moderate a Chronir server: users, groups, members, invites, the audit trail, the database.",
        discussion: """
            Works on the server's database file (--data-dir or --db, before or after the command, or \
            CHRONIR_DATA_DIR / CHRONIR_DB), also while the server runs: connected clients see each change \
            within a moment (the server polls the database), suspensions close the user's sockets. \
            Output is a table for people; --json prints JSON for scripts. \
            Exit status 0 on success, 1 on failure (with a message on stderr), 64 on bad usage.
            """,
        subcommands: [
            Users.self, Groups.self, Members.self, Invites.self, Invitations.self, Notifications.self, Mail.self, Purchases.self,
            Audit.self,
            Stats.self,
            DB.self,
        ])
}
