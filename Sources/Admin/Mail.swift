import ArgumentParser
import Domain
import Store

/// `chronir-admin mail …`: the mail outbox an operator looks at when "I never got the link".
struct Mail: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect the mail outbox and retry a waiting mail.", subcommands: [List.self, Stats.self, Retry.self])

    static func row(_ e: MailOutbox.Entry) -> [String] {
        [
            String(e.id), e.kind.rawValue, e.recipient, e.state.rawValue, String(e.attempts),
            Timestamp(milliseconds: e.createdAt).description,
            e.state == .pending ? Timestamp(milliseconds: e.nextAttemptAt).description : "-",
            e.lastError ?? "",
        ]
    }
    static let header = ["ID", "KIND", "TO", "STATE", "ATTEMPTS", "CREATED", "NEXT", "LAST ERROR"]

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "List mails, newest first (never their text: it holds links that are credentials).",
            discussion: "Example: chronir-admin mail list --state pending")
        @OptionGroup var options: AdminOptions
        @Option(help: "pending | sent | failed | unsendable (default: all)") var state: String?
        @Option(help: "At most this many rows (1…\(OutboxListing.maxRows)).") var limit = 100

        func validate() throws {
            try OutboxListing.validate(
                limit: limit, state: state, as: MailOutbox.State.self, choices: "pending, sent, failed or unsendable")
        }

        func run() throws {
            let state = state.flatMap(MailOutbox.State.init(rawValue:))
            try inspect(read: { try MailOutbox.list(state: state, limit: limit, on: $0) }, output: { Mail.table($0) })
        }
    }

    struct Stats: AdminCommand {
        static let configuration = CommandConfiguration(abstract: "Mails per state.")
        @OptionGroup var options: AdminOptions

        func run() throws {
            try inspect(
                read: { db in
                    let counts = try MailOutbox.counts(on: db)
                    return Dictionary(uniqueKeysWithValues: MailOutbox.State.allCases.map { ($0.rawValue, counts[$0] ?? 0) })
                },
                output: { counts in
                    .table(counts, ["STATE", "COUNT"], MailOutbox.State.allCases.map { [$0.rawValue, String(counts[$0.rawValue] ?? 0)] })
                })
        }
    }

    struct Retry: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a pending mail due now (after an SMTP outage), skipping its back-off.",
            discussion: """
                Only pending mails can be retried: a sent, failed or unsendable mail no longer holds its text. \
                For those, have the user ask again, or use `users verify-email` / `users reset-link`. \
                Example: chronir-admin mail retry 42
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "The mail's id (mail list).") var id: Int64

        struct Result: Encodable { var id: Int64 }

        func run() throws {
            let id = id
            try change(
                write: { now, db in
                    guard try MailOutbox.retryNow(id, at: now, on: db) else { throw AdminError("no pending mail \(id)") }
                    return Result(id: id)
                },
                output: { .line($0, "mail \($0.id) due now") })
        }
    }
}
