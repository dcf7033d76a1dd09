import ArgumentParser
import Dispatch
import Domain
import Foundation
import Storage
import Store

/// `chronir-admin audit …`: the change log as a trail, and its hash chain.
struct Audit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The change log: show it as an audit trail (default), or verify its hash chain.",
        subcommands: [Trail.self, Verify.self], defaultSubcommand: Trail.self)
}

/// `chronir-admin audit verify`
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Recompute the change log's hash chain; exit 1 and name the first broken row if it does not match.",
        discussion: "Example: chronir-admin audit verify")
    @OptionGroup var options: AdminOptions

    func run() throws {
        let database = try options.openDatabase()
        let report = try database.readSync { try ChangeLogChain.verify(on: $0) }
        if options.json {
            var fields = [
                "\"verified\":\(report.verified)", "\"unchained\":\(report.unchained)", "\"redacted\":\(report.redacted)",
            ]
            if let through = report.compactedThrough { fields.append("\"compacted_through_seq\":\(through)") }
            if let seq = report.firstBroken { fields.append("\"first_broken_seq\":\(seq)") }
            if let problem = report.problem { fields.append("\"problem\":\(JSONString.quote(problem))") }
            print("{" + fields.joined(separator: ",") + "}")
        } else if let seq = report.firstBroken {
            print("BROKEN at seq \(seq): \(report.problem ?? "")  (\(report.verified) rows verified before it)")
        } else {
            var notes: [String] = []
            if report.unchained > 0 { notes.append("\(report.unchained) older rows unchained") }
            if report.redacted > 0 { notes.append("\(report.redacted) rows redacted (account deletion)") }
            if let through = report.compactedThrough { notes.append("compacted through seq \(through) (checkpoint verified)") }
            print("ok: \(report.verified) rows verified" + notes.map { ", " + $0 }.joined())
        }
        if report.firstBroken != nil { throw ExitCode(1) }
    }
}

/// `chronir-admin audit [trail]`
struct Trail: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the change log as an audit trail (newest last).",
        discussion: """
            Examples: chronir-admin audit --user ana@example.com --since 2026-11-01T00:00:00Z
                      chronir-admin audit --follow
            """)
    @OptionGroup var options: AdminOptions
    @Option(help: "Only changes to this user's feed (id or email).") var user: String?
    @Option(help: "Only changes to this group's feed (group id).") var group: String?
    @Option(help: "Only changes by this actor: admin, system, or user:<id>.") var actor: String?
    @Option(help: "Only changes at or after this RFC 3339 time.") var since: String?
    @Option(help: "At most this many rows (default 50, newest).") var limit = 50
    @Flag(help: "Keep printing new changes as they are committed (Ctrl-C to stop).") var follow = false

    func run() throws {
        let database = try options.openDatabase()
        var filter = AuditTrail.Filter(actor: actor)
        if let user {
            filter.topic = ChangeLog.userTopic(try Users.find(user, in: database).id)
        } else if let group {
            filter.topic = ChangeLog.groupTopic(group.lowercased())
        }
        if let since {
            guard let ms = Timestamp.parse(since) else { throw AdminError("--since must be an RFC 3339 time") }
            filter.sinceMilliseconds = ms
        }
        let entries = try database.readSync { try AuditTrail.entries(filter, limit: limit, on: $0) }
        if !options.json {
            printTable(["SEQ", "AT", "EVENT", "ACTOR", "TOPIC", "KIND", "OP", "ENTITY", "REASON"], entries.map(Self.row))
        } else {
            entries.forEach(Self.printJSONLine)
        }
        guard follow else { return }
        // Poll for new rows: the server and other tools commit from other processes.
        var lastSeq = try entries.last?.seq ?? database.readSync { try ChangeLog.latestSeq(on: $0) }
        while true {
            filter.afterSeq = lastSeq
            let fresh = try database.readSync { try AuditTrail.entries(filter, limit: 1000, newest: false, on: $0) }
            for entry in fresh {
                if options.json { Self.printJSONLine(entry) } else { print(Self.row(entry).joined(separator: "  ")) }
                lastSeq = entry.seq
            }
            fflush(nil)  // all output streams (stdout is a C global Swift 6 will not touch)
            if fresh.isEmpty { usleep(250_000) }
        }
    }

    static func row(_ e: AuditTrail.Entry) -> [String] {
        [String(e.seq), Timestamp.format(e.atMilliseconds), e.event, e.actor, e.topic, e.kind, e.op, e.entityID, e.reason ?? ""]
    }

    static func printJSONLine(_ e: AuditTrail.Entry) {
        var fields: [String] = [
            "\"seq\":\(e.seq)", "\"batch\":\(e.batch)", "\"event\":\(JSONString.quote(e.event))",
            "\"at\":\(JSONString.quote(Timestamp.format(e.atMilliseconds)))", "\"actor\":\(JSONString.quote(e.actor))",
            "\"topic\":\(JSONString.quote(e.topic))", "\"kind\":\(JSONString.quote(e.kind))", "\"op\":\(JSONString.quote(e.op))",
            "\"id\":\(JSONString.quote(e.entityID))",
        ]
        if let document = e.document { fields.append("\"doc\":\(document)") }
        if let reason = e.reason { fields.append("\"reason\":\(JSONString.quote(reason))") }
        print("{" + fields.joined(separator: ",") + "}")
    }
}
