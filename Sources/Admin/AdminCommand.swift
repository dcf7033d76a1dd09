import ArgumentParser
import Storage

/// A moderation command of `chronir-admin`. Every one has the same shape, spelled out once here:
///
///     open the database → find what the command names → [confirm] → write → print
///
/// `change` runs it for the commands that write: the lookups run before the question, so an
/// unknown id or email fails without asking; the question is asked only then (refused without a
/// terminal unless `--yes`); `now` is read after the answer; the write is one transaction (the Store
/// function's change-log batch commits with it); then the result is printed. `inspect` is the
/// read-only shape: open → find → read → print.
protocol AdminCommand: ParsableCommand {
    /// Where the database is and how to print.
    var options: AdminOptions { get }
}

/// What a command prints: `json` as one JSON document with `--json` (scripts), else `text` (people).
struct AdminOutput {
    var json: any Encodable
    var text: () -> Void

    /// `value` as JSON, or as `header` and `rows` in a table.
    static func table(_ value: some Encodable, _ header: [String], _ rows: [[String]]) -> AdminOutput {
        AdminOutput(json: value, text: { printTable(header, rows) })
    }

    /// `value` as JSON, or `line` for people.
    static func line(_ value: some Encodable, _ line: String) -> AdminOutput {
        AdminOutput(json: value, text: { print(line) })
    }
}

/// A command group whose records print as a table: `header`, then one `row` per record.
protocol TableCommand {
    associatedtype Record: Encodable
    static var header: [String] { get }
    static func row(_ record: Record) -> [String]
}

extension TableCommand {
    /// `records` as JSON, or as a table.
    static func table(_ records: [Record]) -> AdminOutput { .table(records, header, records.map(row)) }

    /// One record, as JSON or as a one-row table.
    static func output(_ record: Record) -> AdminOutput { .table(record, header, [row(record)]) }
}

extension AdminCommand {
    /// Prints `output` the way `--json` asks.
    func emit(_ output: AdminOutput) {
        if options.json { printJSON(output.json) } else { output.text() }
    }

    /// Open → `find` → `preview` (a dry run: print it and stop) → confirm `question` unless `yes` →
    /// `write` at the time read after the answer, in one write transaction → print `output`.
    func change<Target, Result>(
        find: (any SQLDatabase) throws -> Target,
        preview: ((Target) -> AdminOutput)? = nil,
        confirm question: ((Target) -> String)? = nil, yes: Bool = false,
        write: (Target, _ now: Int64, any SQLConnection) throws -> Result,
        output: (Result, Target) -> AdminOutput
    ) throws {
        let database = try options.openDatabase()
        let target = try find(database)
        if let preview {
            emit(preview(target))
            return
        }
        if let question { try confirm(question(target), yes: yes) }
        let now = options.now
        let result = try database.writeSync { try write(target, now, $0) }
        emit(output(result, target))
    }

    /// `change` for a command that names nothing to look up first.
    func change<Result>(
        write: (_ now: Int64, any SQLConnection) throws -> Result, output: (Result) -> AdminOutput
    ) throws {
        try change(find: { _ in () }, write: { _, now, db in try write(now, db) }, output: { result, _ in output(result) })
    }

    /// Open → `find` → `read` in one read snapshot → print `output`.
    func inspect<Target, Value>(
        find: (any SQLDatabase) throws -> Target,
        read: (Target, any SQLConnection) throws -> Value,
        output: (Value) -> AdminOutput
    ) throws {
        let database = try options.openDatabase()
        let target = try find(database)
        emit(output(try database.readSync { try read(target, $0) }))
    }

    /// `inspect` for a command that names nothing to look up first.
    func inspect<Value>(read: (any SQLConnection) throws -> Value, output: (Value) -> AdminOutput) throws {
        try inspect(find: { _ in () }, read: { _, db in try read(db) }, output: output)
    }
}

/// What `mail list` and `notifications list` accept: `--limit` from 1 to `maxRows`, and a `--state`,
/// when given, that `State` knows (`choices` names the states in the message).
enum OutboxListing {
    /// The most rows one listing prints.
    static let maxRows = 10_000

    /// Refuses a `limit` outside 1…`maxRows` or a `state` that is not a `State`, naming the flag.
    static func validate<State: RawRepresentable<String>>(limit: Int, state: String?, as _: State.Type, choices: String) throws {
        guard (1...maxRows).contains(limit) else { throw ValidationError("--limit must be 1…\(maxRows)") }
        if let state, State(rawValue: state) == nil { throw ValidationError("--state must be \(choices)") }
    }
}
