import ArgumentParser
import Domain
import Foundation
import Storage
import Store

/// `chronir-admin purchases …`: store purchases and what they give (docs/subscriptions.md#operators).
struct Purchases: ParsableCommand, TableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List and inspect store purchases and the entitlements they give.",
        subcommands: [List.self, Show.self, Refresh.self])

    static let header = ["ID", "USER", "PRODUCT", "TIER", "STATE", "EXPIRES", "AUTO-RENEW", "ENV", "UPDATED"]
    static func row(_ p: EntitlementStore.Purchase) -> [String] {
        [
            p.id, p.userID ?? "-", p.productID, p.tier, p.state, p.expiresMs.map { Timestamp(milliseconds: $0).description } ?? "-",
            p.autoRenewing ? "yes" : "no", p.environment, Timestamp(milliseconds: p.updatedMs).description,
        ]
    }

    struct List: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "List purchases, newest first (one account's with USER).",
            discussion: "Example: chronir-admin purchases list ana@example.com")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email (default: every account).") var user: String?
        @Option(help: "At most this many (default 200).") var limit = 200

        func run() throws {
            let database = try options.openDatabase()
            let userID = try user.map { try Users.find($0, in: database).id }
            emit(Purchases.table(try database.readSync { try EntitlementStore.purchases(userID: userID, limit: limit, on: $0) }))
        }
    }

    /// What `purchases show` prints as JSON.
    struct Report: Encodable {
        var entitlement: Entitlement
        var purchases: [EntitlementStore.Purchase]
        var tierChanges: [TierChange]

        struct TierChange: Encodable {
            var from: String
            var to: String
            var cause: String
            var detail: String?
            var at: Timestamp
        }

        enum CodingKeys: String, CodingKey {
            case entitlement, purchases
            case tierChanges = "tier_changes"
        }
    }

    struct Show: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show an account's entitlement, its purchases and every change of its tier with the cause.",
            discussion: "Example: chronir-admin purchases show ana@example.com")
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String

        func run() throws {
            try inspect(
                account: user,
                read: { target, now, db -> (User, Report) in
                    let report = Report(
                        entitlement: try EntitlementStore.entitlement(userID: target.id, at: now, on: db),
                        purchases: try EntitlementStore.purchases(userID: target.id, on: db),
                        tierChanges: try EntitlementStore.tierChanges(userID: target.id, on: db).map {
                            Report.TierChange(
                                from: $0.from, to: $0.to, cause: $0.cause, detail: $0.detail, at: Timestamp(milliseconds: $0.at))
                        })
                    return (target, report)
                },
                output: { (target: User, report: Report) in
                    AdminOutput(json: report) {
                        let e = report.entitlement
                        print(
                            "\(target.email): \(e.tier.rawValue), \(e.state.rawValue)"
                                + (e.source.map { " (\($0.rawValue)\(e.productID.map { " \($0)" } ?? ""))" } ?? "")
                                + (e.expiresAt.map { ", until \($0)" } ?? ""))
                        if !report.purchases.isEmpty {
                            print("")
                            printTable(Purchases.header, report.purchases.map(Purchases.row))
                        }
                        if !report.tierChanges.isEmpty {
                            print("")
                            printTable(
                                ["AT", "FROM", "TO", "CAUSE", "DETAIL"],
                                report.tierChanges.map { [$0.at.description, $0.from, $0.to, $0.cause, $0.detail ?? "-"] })
                        }
                    }
                })
        }
    }

    /// Asks the server for an App Store Server API status refresh of the account's App Store purchases.
    /// The server makes the request (it holds the API key and the network configuration; this command
    /// only has the database): its refresher picks the request up within `AppStoreRefresher.tick`.
    struct Refresh: AdminCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the server to refresh an account's App Store subscriptions from the App Store Server API.",
            discussion: """
                The running server (with --appstore-key-file) reads each one's status within a minute and applies it as it \
                applies a purchase; `purchases show` then shows the result (tier changes with cause `refresh`). \
                Example: chronir-admin purchases refresh ana@example.com
                """)
        @OptionGroup var options: AdminOptions
        @Argument(help: "User id or email.") var user: String

        func run() throws {
            let database = try options.openDatabase()
            let target = try Users.find(user, in: database)
            let now = options.now
            let count = try database.writeSync { try EntitlementStore.requestAppStoreRefresh(userID: target.id, at: now, on: $0) }
            print(
                count == 0
                    ? "\(target.email) has no App Store purchase"
                    : "refresh requested for \(count) App Store purchase(s) of \(target.email); the server reads them within a minute")
        }
    }
}
