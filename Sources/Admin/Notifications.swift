import ArgumentParser
import Domain
import Storage
import Store

/// `chronir-admin notifications …`: the outbox an operator looks at when "my phone got nothing".
struct Notifications: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect the notification outbox, retry failed deliveries, send a test notification.",
        subcommands: [List.self, Stats.self, Retry.self, Test.self])

    static func row(_ e: NotificationOutbox.Entry) -> [String] {
        [
            String(e.id), e.type.rawValue, e.state.rawValue, String(e.recipients.count),
            Timestamp(milliseconds: e.notBefore).description, e.key,
        ]
    }
    static let header = ["ID", "TYPE", "STATE", "RECIPIENTS", "DUE", "KEY"]

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "List outbox rows, oldest first.", discussion: "Example: chronir-admin notifications list --state pending")
        @OptionGroup var options: AdminOptions
        @Option(help: "pending | expanded | skipped | expired (default: all)") var state: String?
        @Option(help: "At most this many rows (1…\(OutboxListing.maxRows)).") var limit = 100

        func validate() throws {
            try OutboxListing.validate(
                limit: limit, state: state, as: NotificationOutbox.State.self, choices: "pending, expanded, skipped or expired")
        }

        func run() throws {
            let state = state.flatMap(NotificationOutbox.State.init(rawValue:))
            try inspect(
                read: { try NotificationOutbox.entries(state: state, limit: limit, on: $0) },
                output: { Notifications.table($0) })
        }
    }

    struct Stats: AdminCommand {
        static let configuration = CommandConfiguration(abstract: "Outbox rows per state and type; deliveries waiting and retrying.")
        @OptionGroup var options: AdminOptions

        struct Counts: Encodable {
            var outbox: [String: [String: Int64]]
            var deliveriesPending: Int64
            var deliveriesRetrying: Int64
            enum CodingKeys: String, CodingKey {
                case outbox
                case deliveriesPending = "deliveries_pending"
                case deliveriesRetrying = "deliveries_retrying"
            }
        }

        func run() throws {
            try inspect(
                read: { db in
                    let rows = try NotificationOutbox.counts(on: db)
                    let deliveries = try NotificationDeliveries.counts(on: db)
                    var outbox: [String: [String: Int64]] = [:]
                    for row in rows { outbox[row.state, default: [:]][row.type] = row.count }
                    return (rows, Counts(outbox: outbox, deliveriesPending: deliveries.pending, deliveriesRetrying: deliveries.retrying))
                },
                output: { rows, counts in
                    .table(
                        counts, ["STATE", "TYPE", "COUNT"],
                        rows.map { [$0.state, $0.type, String($0.count)] } + [
                            ["deliveries", "pending", String(counts.deliveriesPending)],
                            ["deliveries", "retrying", String(counts.deliveriesRetrying)],
                        ])
                })
        }
    }

    struct Retry: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make every delivery waiting for a retry due now (after a provider outage).")
        @OptionGroup var options: AdminOptions

        struct Result: Encodable { var retried: Int }

        func run() throws {
            try change(
                write: { now, db in Result(retried: try NotificationDeliveries.retryNow(at: now, on: db)) },
                output: { .line($0, "\($0.retried) deliveries due now") })
        }
    }

    struct Test: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue a test notification to an account's devices.",
            discussion: "Example: chronir-admin notifications test ana@example.com")
        @OptionGroup var options: AdminOptions
        @Argument(help: "The account: id or email.") var user: String
        @Option(help: "Title (≤ 120 characters).") var title = "Chronir test"
        @Option(help: "Body (≤ 400 characters).") var body = "Notifications reach this device."

        struct Result: Encodable { var key: String }

        func run() throws {
            let (title, body) = (title, body)
            try change(
                find: { try Users.find(user, in: $0) },
                write: { user, now, db in
                    Result(key: try NotificationOutbox.enqueueTest(userID: user.id, title: title, body: body, at: now, on: db))
                },
                output: { result, user in .line(result, "queued \(result.key) for \(user.email)") })
        }
    }
}
