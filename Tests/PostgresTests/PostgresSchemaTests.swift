import Foundation
import Postgres
import SQLite
import Storage
import Store
import TestSupport
import Testing

/// A value bound the same way on both backends (the Store binds integer/text/blob/null).
enum Bind {
    case int(Int64)
    case text(String)
    case blob([UInt8])
    case null

    var sqlite: SQLValue {
        switch self {
        case .int(let v): .integer(v)
        case .text(let v): .text(v)
        case .blob(let v): .blob(v)
        case .null: .null
        }
    }

    /// The same value: both backends take `SQLValue`s.
    var postgres: SQLValue { sqlite }
}

/// What one statement did on one backend.
enum Outcome: Equatable, CustomStringConvertible {
    /// Ran; this many rows changed.
    case ok(Int)
    /// Refused as a constraint violation (SQLite SQLITE_CONSTRAINT, PostgreSQL SQLSTATE class 23).
    case constraint(String)
    /// Failed otherwise (a schema mistake, e.g. a missing column).
    case other(String)

    var description: String {
        switch self {
        case .ok(let n): "ok(\(n))"
        case .constraint(let m): "constraint(\(m))"
        case .other(let m): "other(\(m))"
        }
    }
}

/// One database of each kind, migrated with this binary's schema: SQLite through `MigrationRunner`
/// and `Schema.migrations`, PostgreSQL with `Schema.postgresMigrations`, each in its own transaction.
struct BothSchemas {
    let directory = TemporaryDirectory(prefix: "pgschema")
    let sqlite: SQLiteDatabase
    let postgres: PostgresConnection

    init(postgresURL: String? = nil) throws {
        sqlite = try SQLiteDatabase(path: directory.file(named: "schema.sqlite"))
        _ = try MigrationRunner.migrate(sqlite, migrations: Schema.migrations, nowMilliseconds: 1)
        postgres = try PostgresConnection(url: try postgresURL ?? PostgresServer.freshDatabaseURL())
        try Self.migrate(postgres)
    }

    /// Applies every PostgreSQL migration in order, each in one transaction (rolled back on failure).
    static func migrate(_ connection: PostgresConnection) throws {
        for migration in Schema.postgresMigrations {
            try connection.execute("BEGIN")
            do {
                try connection.execute(migration.sql)
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                Issue.record("migration \(migration.name) failed on PostgreSQL: \(error)")
                throw error
            }
        }
    }

    /// Runs `sql` (with `?n` placeholders) in its own transaction on each backend.
    func run(_ sql: String, _ binds: [Bind] = []) -> (sqlite: Outcome, postgres: Outcome) {
        let onSQLite: Outcome
        do {
            onSQLite = .ok(try sqlite.writeSync { try $0.run(sql, binds.map(\.sqlite)) })
        } catch let error as SQLiteError {
            onSQLite = error.isConstraintViolation ? .constraint(error.message) : .other(error.message)
        } catch {
            onSQLite = .other("\(error)")
        }
        let onPostgres: Outcome
        do {
            onPostgres = .ok(try postgres.run(sql, binds.map(\.postgres)))
        } catch {
            let failure = error.storageFailure
            onPostgres =
                failure?.isConstraintViolation == true
                ? .constraint(failure?.message ?? "") : .other(failure?.message ?? "\(error)")
        }
        return (onSQLite, onPostgres)
    }

    /// Rows of a query on each backend, every value rendered as text (NULL as "NULL").
    func rows(_ sql: String, _ binds: [Bind] = []) throws -> (sqlite: [[String]], postgres: [[String]]) {
        let onSQLite = try sqlite.readSync { connection in
            try connection.query(sql, binds.map(\.sqlite)).map { row in
                row.columnNames.indices.map { index -> String in
                    switch row[index] {
                    case .integer(let v): String(v)
                    case .text(let v): v
                    case .blob(let v): v.map { String(format: "%02x", $0) }.joined()
                    case .real(let v): String(v)
                    case .null: "NULL"
                    }
                }
            }
        }
        let onPostgres = try postgres.query(sql, binds.map(\.postgres)).map { row in
            row.values.map { value -> String in
                switch value {
                case .integer(let v): String(v)
                case .text(let v): v
                case .blob(let v): v.map { String(format: "%02x", $0) }.joined()
                case .real(let v): String(v)
                case .null: "NULL"
                }
            }
        }
        return (onSQLite, onPostgres)
    }
}

/// One step of a scenario and what both backends must do with it.
struct Step: CustomStringConvertible {
    /// Expected result: run (with this many rows changed), or refused as a constraint violation
    /// whose message contains `fragment` ("" when the wording is the engine's own).
    enum Expect { case ok(Int), rejected(String) }

    let sql: String
    let binds: [Bind]
    let expect: Expect

    init(_ sql: String, _ binds: [Bind] = [], _ expect: Expect = .ok(1)) {
        self.sql = sql
        self.binds = binds
        self.expect = expect
    }

    var description: String { sql }

    /// Whether `outcome` is what this step expects.
    func accepts(_ outcome: Outcome) -> Bool {
        switch (expect, outcome) {
        case (.ok(let n), .ok(let m)): n == m
        case (.rejected(let fragment), .constraint(let message)): fragment.isEmpty || message.contains(fragment)
        default: false
        }
    }
}

/// Bytes of `count` copies of `byte` (hash-shaped blobs).
func bytes(_ count: Int, _ byte: UInt8 = 0xab) -> [UInt8] { [UInt8](repeating: byte, count: count) }

@Suite(
    "PostgreSQL schema: Migrations/postgres has the SQLite schema's tables, constraints and triggers",
    .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries: apt-get install postgresql"))
struct PostgresSchemaTests {
    @Test("same migration names as SQLite, and every one applies in order in its own transaction")
    func migrationsApply() throws {
        #expect(Schema.postgresMigrations.map(\.name) == Schema.migrations.map(\.name))
        let both = try BothSchemas()
        #expect(try both.postgres.query("SELECT count(*) FROM log_epoch").map(\.values) == [[.integer(1)]])
    }

    @Test("same tables and columns, in order, with mapped types, nullability, defaults and primary keys")
    func sameColumns() throws {
        let both = try BothSchemas()
        let sqliteColumns = try both.sqlite.readSync { connection in
            try connection.query(
                """
                SELECT m.name AS tbl, p.name AS col, p.type AS type, p."notnull" AS not_null, p.pk AS pk,
                       p.dflt_value IS NOT NULL AS has_default
                FROM sqlite_schema m, pragma_table_info(m.name) p
                WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'schema_migrations'
                ORDER BY m.name, p.cid
                """
            ).map { row -> String in
                let type = ["INTEGER": "bigint", "TEXT": "text", "BLOB": "bytea"][row.string("type") ?? ""] ?? "?"
                let notNull = row.int("not_null") == 1 || (row.int("pk") ?? 0) > 0
                return [
                    row.string("tbl") ?? "", row.string("col") ?? "", type, notNull ? "NOT NULL" : "NULL",
                    "pk\(row.int("pk") ?? 0)", row.int("has_default") == 1 ? "default" : "-",
                    type == "text" ? "C" : "-",
                ].joined(separator: " ")
            }
        }
        let postgresColumns = try both.postgres.query(
            """
            SELECT c.table_name::text, c.column_name::text, c.data_type::text, c.is_nullable::text,
                   COALESCE((SELECT k.o FROM pg_index ix,
                                 unnest(ix.indkey::int2[]) WITH ORDINALITY k(n, o), pg_attribute a
                             WHERE ix.indrelid = (quote_ident(c.table_name) || '')::regclass AND ix.indisprimary
                               AND a.attrelid = ix.indrelid AND a.attnum = k.n AND a.attname = c.column_name), 0),
                   c.column_default IS NOT NULL, COALESCE(c.collation_name::text, '-')
            FROM information_schema.columns c
            WHERE c.table_schema = current_schema() AND c.table_name <> 'schema_migrations'
            ORDER BY c.table_name COLLATE "C", c.ordinal_position
            """
        ).map(\.values).map { row -> String in
            guard case .text(let table) = row[0], case .text(let column) = row[1], case .text(let type) = row[2],
                case .text(let nullable) = row[3], case .integer(let pk) = row[4], case .integer(let hasDefault) = row[5],
                case .text(let collation) = row[6]
            else { return "unexpected row \(row)" }
            return [
                table, column, type, nullable == "YES" ? "NULL" : "NOT NULL", "pk\(pk)", hasDefault == 1 ? "default" : "-",
                collation,
            ].joined(separator: " ")
        }
        #expect(sqliteColumns.count > 50)
        #expect(postgresColumns == sqliteColumns)
    }

    @Test("same named indexes: table, columns, uniqueness and partial predicate; same unique constraints")
    func sameIndexes() throws {
        let both = try BothSchemas()
        /// Lower case, no parentheses, no `::text` casts, single spaces: the predicate's meaning as text.
        func normalised(_ predicate: String) -> String {
            predicate.replacingOccurrences(of: "::text", with: "").filter { $0 != "(" && $0 != ")" }.lowercased()
                .split(separator: " ").joined(separator: " ")
        }
        let sqliteIndexes = try both.sqlite.readSync { connection in
            try connection.query(
                """
                SELECT m.name AS tbl, l.name AS name, l."unique" AS uniq, l.origin AS origin,
                       (SELECT i.sql FROM sqlite_schema i WHERE i.type = 'index' AND i.name = l.name) AS sql
                FROM sqlite_schema m, pragma_index_list(m.name) l
                WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'schema_migrations'
                """
            ).map { row -> String in
                let name = row.string("name") ?? ""
                let columns = try connection.query(
                    "SELECT name FROM pragma_index_info(?1) ORDER BY seqno", [.text(name)]
                ).compactMap { $0.string("name") }.joined(separator: ",")
                let sql = row.string("sql") ?? ""
                let predicate = sql.range(of: " WHERE ").map { normalised(String(sql[$0.upperBound...])) } ?? "-"
                // An automatic index (UNIQUE column or non-rowid primary key) has no name of ours.
                let shownName = row.string("origin") == "c" ? name : row.string("origin") ?? "?"
                return [row.string("tbl") ?? "", shownName, columns, row.int("uniq") == 1 ? "unique" : "-", predicate]
                    .joined(separator: " | ")
            }.sorted()
        }
        let postgresIndexes = try both.postgres.query(
            """
            SELECT t.relname::text, i.relname::text,
                   array_to_string(ARRAY(SELECT a.attname FROM unnest(ix.indkey::int2[]) WITH ORDINALITY k(n, o)
                                         JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.n
                                         ORDER BY k.o), ','),
                   ix.indisunique::int, COALESCE(pg_get_expr(ix.indpred, ix.indrelid), '-'),
                   COALESCE((SELECT c.contype::text FROM pg_constraint c WHERE c.conindid = ix.indexrelid
                             AND c.contype IN ('p', 'u')), 'c')
            FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = current_schema() AND t.relname <> 'schema_migrations'
            """
        ).map(\.values).compactMap { row -> String? in
            guard case .text(let table) = row[0], case .text(let name) = row[1], case .text(let columns) = row[2],
                case .integer(let unique) = row[3], case .text(let predicate) = row[4], case .text(let origin) = row[5]
            else { return "unexpected row \(row)" }
            // SQLite lists an automatic index for a primary key only on WITHOUT ROWID tables (a rowid
            // table's INTEGER PRIMARY KEY is the rowid; its TEXT one gets an automatic index too).
            let shownName = origin == "c" ? name : origin == "p" ? "pk" : "u"
            return [table, shownName, columns, unique == 1 ? "unique" : "-", predicate == "-" ? "-" : normalised(predicate)]
                .joined(separator: " | ")
        }.sorted()
        // A primary key that is SQLite's rowid (INTEGER PRIMARY KEY) has no index row there.
        let rowidKeys: Set<String> = try both.sqlite.readSync { connection in
            Set(
                try connection.query(
                    """
                    SELECT m.name AS tbl, p.name AS col FROM sqlite_schema m, pragma_table_info(m.name) p
                    WHERE m.type = 'table' AND p.pk = 1 AND p.type = 'INTEGER'
                      AND (SELECT count(*) FROM pragma_table_info(m.name) WHERE pk > 0) = 1
                    """
                ).map { "\($0.string("tbl") ?? "") | pk | \($0.string("col") ?? "") | unique | -" })
        }
        #expect(sqliteIndexes.count > 20)
        #expect(postgresIndexes.filter { !rowidKeys.contains($0) } == sqliteIndexes)
    }

    @Test("same triggers, by name and table")
    func sameTriggers() throws {
        let both = try BothSchemas()
        let sqliteTriggers = try both.sqlite.readSync { connection in
            try connection.query("SELECT tbl_name, name FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
                .map { "\($0.string("tbl_name") ?? "").\($0.string("name") ?? "")" }
        }
        let postgresTriggers = try both.postgres.query(
            """
            SELECT c.relname::text || '.' || t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
            WHERE NOT t.tgisinternal ORDER BY t.tgname COLLATE "C"
            """
        ).map(\.values).map { row -> String in
            if case .text(let name) = row[0] { name } else { "\(row)" }
        }
        #expect(sqliteTriggers.count == 15)  // 13, and attachments_frozen_insert/update (0022)
        #expect(postgresTriggers == sqliteTriggers)
    }

    /// Runs `steps` in order on both backends; each must do what it expects on both.
    private func play(_ steps: [Step], on both: BothSchemas) {
        for step in steps {
            let outcome = both.run(step.sql, step.binds)
            #expect(step.accepts(outcome.sqlite), "SQLite: \(step) → \(outcome.sqlite)")
            #expect(step.accepts(outcome.postgres), "PostgreSQL: \(step) → \(outcome.postgres)")
        }
    }

    /// An answer to alarm a1's occurrence at 100: ?1 id, ?2 user_id, ?3 user_name, ?4 status, ?5 method.
    private static let insertCompletion = """
        INSERT INTO shared_completions
            (id, group_id, alarm_id, user_id, user_name, scheduled_ms, status, completion_method, snooze_count, completed_ms)
        VALUES (?1, 'g1', 'a1', ?2, ?3, 100, ?4, ?5, 0, 101)
        """

    /// Group g1's invite code with hash ?1.
    private static let insertInviteCode = """
        INSERT INTO invite_codes (group_id, code_hash, created_by, created_ms, expires_ms) VALUES ('g1', ?1, 'u1', 1, 2)
        """

    /// A user, a group it owns (max 2 members) with its owner membership, and an alarm.
    private let seed: [Step] = [
        Step(
            "INSERT INTO users (id, email, display_name, password_hash, created_ms, updated_ms) VALUES (?1, ?2, 'U', 'h', 1, 1)",
            [.text("u1"), .text("a@example.com")]),
        Step(
            "INSERT INTO users (id, email, display_name, password_hash, created_ms, updated_ms) VALUES (?1, ?2, 'V', 'h', 1, 1)",
            [.text("u2"), .text("b@example.com")]),
        Step(
            """
            INSERT INTO groups (id, name, owner_id, max_members, member_count, created_ms, updated_ms)
            VALUES ('g1', 'G', 'u1', 2, 1, 1, 1)
            """),
        Step(
            """
            INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms)
            VALUES ('g1', 'u1', 'U', 'owner', 'active', 1)
            """),
        Step(
            """
            INSERT INTO shared_alarms (id, group_id, created_by, document, grace_ms, version, created_ms, updated_ms)
            VALUES ('a1', 'g1', 'u1', '{}', 60000, 1, 1, 1)
            """),
    ]

    @Test("unique, check and foreign-key constraints refuse what SQLite refuses, and accept what it accepts")
    func constraints() throws {
        let both = try BothSchemas()
        play(
            seed + [
                // users: unique email, enum CHECKs, defaults.
                Step(
                    """
                    INSERT INTO users (id, email, display_name, password_hash, created_ms, updated_ms) VALUES ('u3', 'a@example.com', \
                    'X', 'h', 1, 1)
                    """,
                    [], .rejected("")),
                Step(
                    """
                    INSERT INTO users (id, email, display_name, password_hash, tier, created_ms, updated_ms) VALUES ('u3', \
                    'c@example.com', 'X', 'h', 'gold', 1, 1)
                    """,
                    [], .rejected("")),
                Step("UPDATE users SET status = 'banned' WHERE id = 'u1'", [], .rejected("")),
                // sessions: foreign key to users, bytea primary key.
                Step(
                    "INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms, expires_ms) VALUES (?1, 'nobody', 1, 1, 2)",
                    [.blob(bytes(32))], .rejected("")),
                Step(
                    "INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms, expires_ms) VALUES (?1, 'u1', 1, 1, 2)",
                    [.blob(bytes(32))]),
                Step(
                    "INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms, expires_ms) VALUES (?1, 'u2', 1, 1, 2)",
                    [.blob(bytes(32))], .rejected("")),
                // login_failures: the id is assigned by the database when omitted.
                Step("INSERT INTO login_failures (subject, at_ms) VALUES ('ip:1', 5)"),
                Step("INSERT INTO login_failures (subject, at_ms) VALUES ('ip:1', 6)"),
                // groups: member_count within 0…max_members.
                Step("UPDATE groups SET member_count = 3 WHERE id = 'g1'", [], .rejected("")),
                Step("UPDATE groups SET member_count = 2 WHERE id = 'g1'"),
                // group_members: one active owner; status and removed_ms agree; role enum.
                Step(
                    """
                    INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms) VALUES ('g1', 'u2', 'V', \
                    'owner', 'active', 1)
                    """,
                    [], .rejected("")),
                Step(
                    """
                    INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms) VALUES ('g1', 'u2', 'V', \
                    'member', 'left', 1)
                    """,
                    [], .rejected("")),
                Step(
                    """
                    INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms, removed_ms) VALUES ('g1', 'u2', \
                    'V', 'owner', 'removed', 1, 2)
                    """
                ),
                Step("UPDATE group_members SET role = 'boss' WHERE user_id = 'u2'", [], .rejected("")),
                Step("UPDATE group_members SET status = 'active' WHERE user_id = 'u2'", [], .rejected("")),
                // invite_codes: a 32-byte, unique hash.
                Step(Self.insertInviteCode, [.blob(bytes(31))], .rejected("")),
                Step(Self.insertInviteCode, [.blob(bytes(32))]),
                // The Store's upsert (InviteCodeStore) runs on both.
                Step(
                    """
                    INSERT INTO invite_codes (group_id, code_hash, created_by, created_ms, expires_ms)
                    VALUES ('g1', ?1, 'u1', 3, 4)
                    ON CONFLICT (group_id) DO UPDATE SET code_hash = excluded.code_hash, created_ms = excluded.created_ms
                    """,
                    [.blob(bytes(32, 1))]),
                // invitations: method matches which of email / token is set.
                Step(
                    """
                    INSERT INTO invitations (id, group_id, invited_by, method, role, status, created_ms, expires_ms)
                    VALUES ('i1', 'g1', 'u1', 'email', 'member', 'pending', 1, 2)
                    """,
                    [], .rejected("")),
                Step(
                    """
                    INSERT INTO invitations
                        (id, group_id, invited_by, invitee_email, token_hash, method, role, status, created_ms, expires_ms)
                    VALUES ('i1', 'g1', 'u1', 'x@example.com', ?1, 'email', 'member', 'pending', 1, 2)
                    """,
                    [.blob(bytes(32))], .rejected("")),
                Step(
                    """
                    INSERT INTO invitations (id, group_id, invited_by, token_hash, method, role, status, created_ms, expires_ms)
                    VALUES ('i1', 'g1', 'u1', ?1, 'link', 'member', 'pending', 1, 2)
                    """,
                    [.blob(bytes(32))]),
                Step(
                    """
                    INSERT INTO invitations (id, group_id, invited_by, token_hash, method, role, status, created_ms, expires_ms)
                    VALUES ('i2', 'g1', 'u1', ?1, 'link', 'owner', 'pending', 1, 2)
                    """,
                    [.blob(bytes(32, 2))], .rejected("")),
                // shared_alarms / shared_completions: grace > 0; one answer per member and occurrence,
                // anonymised answers (user_id NULL) never collide; completions are immutable.
                Step("UPDATE shared_alarms SET grace_ms = 0 WHERE id = 'a1'", [], .rejected("")),
                Step(Self.insertCompletion, [.text("c1"), .text("u1"), .text("U"), .text("completed"), .text("on_time")]),
                Step(
                    Self.insertCompletion, [.text("c2"), .text("u1"), .text("U"), .text("completed"), .text("on_time")],
                    .rejected("")),
                Step(
                    Self.insertCompletion, [.text("c2"), .text("u2"), .text("V"), .text("completed"), .text("late")],
                    .rejected("")),
                Step(
                    Self.insertCompletion, [.text("c3"), .null, .text("Deleted User"), .text("skipped"), .text("skipped")]),
                Step(
                    Self.insertCompletion, [.text("c4"), .null, .text("Deleted User"), .text("skipped"), .text("skipped")]),
                Step("UPDATE shared_completions SET note = 'edited' WHERE id = 'c1'", [], .rejected("completions are immutable")),
                Step(
                    "UPDATE shared_completions SET scheduled_ms = scheduled_ms WHERE id = 'c1'", [],
                    .rejected("completions are immutable")),
                Step("UPDATE shared_completions SET user_id = NULL, user_name = 'Deleted User' WHERE id = 'c1'"),
                // log_epoch: exactly one row, id 1, a 32-character epoch.
                Step("INSERT INTO log_epoch (id, epoch) VALUES (2, ?1)", [.text(String(repeating: "a", count: 32))], .rejected("")),
                Step("UPDATE log_epoch SET epoch = 'short' WHERE id = 1", [], .rejected("")),
                // Deleting a group cascades to its rows.
                Step("DELETE FROM groups WHERE id = 'g1'"),
                Step("DELETE FROM users WHERE id = 'u1'"),
            ], on: both)
        // Defaults filled in, the database-assigned ids, and what the cascades left: the same on both.
        for sql in [
            "SELECT id, tier, status, version FROM users ORDER BY id",
            "SELECT id, subject FROM login_failures ORDER BY id",
            "SELECT (SELECT count(*) FROM group_members), (SELECT count(*) FROM shared_completions), (SELECT count(*) FROM sessions)",
        ] {
            let rows = try both.rows(sql)
            #expect(rows.postgres == rows.sqlite, "\(sql)")
        }
        #expect(try both.rows("SELECT id, tier, status, version FROM users").postgres == [["u2", "free", "active", "1"]])
    }

    @Test("a frozen group refuses every insert and update of its rows with 'group_frozen' until unfrozen")
    func groupFrozen() throws {
        let both = try BothSchemas()
        let frozen = Step.Expect.rejected("group_frozen")
        play(
            seed + [
                Step(Self.insertInviteCode, [.blob(bytes(32))]),
                Step("UPDATE groups SET frozen_ms = 10 WHERE id = 'g1'"),
                Step("UPDATE groups SET name = 'renamed' WHERE id = 'g1'", [], frozen),
                Step("UPDATE groups SET frozen_ms = 11 WHERE id = 'g1'", [], frozen),
                Step(
                    """
                    INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms) VALUES ('g1', 'u2', 'V', \
                    'member', 'active', 1)
                    """,
                    [], frozen),
                Step("UPDATE group_members SET display_name = 'X' WHERE group_id = 'g1'", [], frozen),
                Step("UPDATE invite_codes SET disabled_ms = 5 WHERE group_id = 'g1'", [], frozen),
                Step(
                    """
                    INSERT INTO invitations (id, group_id, invited_by, token_hash, method, role, status, created_ms, expires_ms)
                    VALUES ('i1', 'g1', 'u1', ?1, 'link', 'member', 'pending', 1, 2)
                    """,
                    [.blob(bytes(32, 3))], frozen),
                Step(
                    """
                    INSERT INTO shared_alarms (id, group_id, created_by, document, grace_ms, version, created_ms, updated_ms)
                    VALUES ('a2', 'g1', 'u1', '{}', 60000, 1, 1, 1)
                    """,
                    [], frozen),
                Step("UPDATE shared_alarms SET open_ms = 5 WHERE id = 'a1'", [], frozen),
                Step(Self.insertCompletion, [.text("c1"), .text("u1"), .text("U"), .text("completed"), .text("on_time")], frozen),
                // The unfreeze itself is accepted, and then writes are again.
                Step("UPDATE groups SET frozen_ms = NULL WHERE id = 'g1'"),
                Step("UPDATE groups SET name = 'renamed' WHERE id = 'g1'"),
                Step("UPDATE shared_alarms SET open_ms = 5 WHERE id = 'a1'"),
                Step("UPDATE invite_codes SET disabled_ms = 5 WHERE group_id = 'g1'"),
            ], on: both)
        // The frozen error is what the app maps to 409 GROUP_FROZEN: a constraint violation (23514).
        try both.postgres.execute("UPDATE groups SET frozen_ms = 12 WHERE id = 'g1'")
        let error = #expect(throws: PostgresError.self) {
            try both.postgres.query("UPDATE groups SET name = 'again' WHERE id = 'g1'")
        }
        #expect(error?.sqlState == "23514")
        #expect(error?.isConstraintViolation == true)
    }

    @Test("the change log is append-only: only a redaction (document with redacted_ms, once) may update a row")
    func changeLogAppendOnly() throws {
        let both = try BothSchemas()
        let appendOnly = Step.Expect.rejected("change_log is append-only")
        let redactOnly = Step.Expect.rejected("a change_log document may only be redacted")
        let insert = """
            INSERT INTO change_log (seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason, hash, document_digest)
            VALUES (?1, ?1, 'user_registered', 1, 'system', 'user:u1', 'user', ?2, 'u1', '{"name":"U"}', NULL, ?3, ?4)
            """
        play(
            [
                Step(insert, [.int(1), .text("added"), .blob(bytes(32)), .blob(bytes(32))]),
                Step(insert, [.int(2), .text("added"), .blob(bytes(32)), .null]),
                Step(insert, [.int(1), .text("added"), .blob(bytes(32)), .null], .rejected("")),
                Step(insert, [.int(3), .text("renamed"), .blob(bytes(32)), .null], .rejected("")),
                Step(insert, [.int(3), .text("added"), .blob(bytes(16)), .null], .rejected("")),
                Step(insert, [.int(3), .text("added"), .null, .blob(bytes(31))], .rejected("")),
                Step("UPDATE change_log SET seq = 9 WHERE seq = 1", [], appendOnly),
                Step("UPDATE change_log SET event = event WHERE seq = 1", [], appendOnly),
                Step("UPDATE change_log SET hash = ?1 WHERE seq = 1", [.blob(bytes(32, 1))], appendOnly),
                Step("UPDATE change_log SET document_digest = NULL WHERE seq = 1", [], appendOnly),
                Step("UPDATE change_log SET reason = 'x' WHERE seq = 1", [], appendOnly),
                Step("UPDATE change_log SET document = '{}' WHERE seq = 1", [], redactOnly),
                Step("UPDATE change_log SET redacted_ms = NULL WHERE seq = 1", [], redactOnly),
                // The redaction: document and redacted_ms together, accepted once; repeating it with the
                // same redacted_ms is accepted, changing or clearing redacted_ms is not.
                Step("UPDATE change_log SET document = '{\"name\":\"Deleted User\"}', redacted_ms = 50 WHERE seq = 1"),
                Step("UPDATE change_log SET document = '{}', redacted_ms = 50 WHERE seq = 1"),
                Step("UPDATE change_log SET redacted_ms = 51 WHERE seq = 1", [], redactOnly),
                Step("UPDATE change_log SET document = NULL, redacted_ms = NULL WHERE seq = 1", [], redactOnly),
                // Compaction deletes the oldest rows.
                Step("DELETE FROM change_log WHERE seq <= 1"),
            ], on: both)
        let rows = try both.rows("SELECT seq, document, redacted_ms FROM change_log ORDER BY seq")
        #expect(rows.postgres == [["2", #"{"name":"U"}"#, "NULL"]])
        #expect(rows.postgres == rows.sqlite)
    }

    @Test("log_epoch holds one epoch of 32 lower-case hex characters, different in every database")
    func logEpoch() throws {
        let first = try BothSchemas()
        let second = try BothSchemas()
        var epochs: [String] = []
        for both in [first, second] {
            let rows = try both.rows("SELECT id, epoch FROM log_epoch")
            #expect(rows.sqlite.count == 1)
            #expect(rows.postgres.count == 1)
            let epoch = rows.postgres.first?.last ?? ""
            #expect(rows.postgres.first?.first == "1")
            #expect(epoch.count == 32)
            #expect(epoch.allSatisfy { "0123456789abcdef".contains($0) }, "\(epoch)")
            epochs.append(epoch)
        }
        #expect(epochs[0] != epochs[1])
    }

    @Test("text compares and orders by bytes as in SQLite ('B' < 'a'), even where the database's collation is linguistic")
    func textIsBinary() throws {
        // A database whose default collation orders linguistically (ICU en-US: 'a' < 'B'), so only
        // the columns' own COLLATE "C" can give SQLite's byte order.
        let server = try PostgresServer.shared()
        let name = "icu\(UInt64.random(in: 0...UInt64.max))"
        try PostgresConnection(url: server.url).execute(
            "CREATE DATABASE \(name) TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'")
        let both = try BothSchemas(postgresURL: server.url.replacingOccurrences(of: "/postgres?", with: "/\(name)?"))
        #expect(try both.postgres.query("SELECT 'a' < 'B'").map(\.values) == [[.integer(1)]])  // the database's own order

        let subjects = ["b", "B", "a", "A", "Z", "_", "é", "É", "ip:1", "ip:10", "ip:9", "email:x"]
        for subject in subjects {
            let outcome = both.run("INSERT INTO login_failures (subject, at_ms) VALUES (?1, 1)", [.text(subject)])
            #expect(outcome.sqlite == .ok(1) && outcome.postgres == .ok(1))
        }
        let byteOrder = subjects.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let ordered = try both.rows("SELECT subject FROM login_failures ORDER BY subject")
        #expect(ordered.sqlite.map { $0[0] } == byteOrder)
        #expect(ordered.postgres.map { $0[0] } == byteOrder)
        // Range scans (SessionStore.clearAll uses `subject >= prefix AND subject < next`), equality,
        // MIN/MAX and lower() (ASCII-only in SQLite) agree too.
        for sql in [
            "SELECT subject FROM login_failures WHERE subject >= 'B' AND subject < 'a' ORDER BY subject",
            "SELECT count(*) FROM login_failures WHERE subject = 'a'",
            "SELECT min(subject), max(subject) FROM login_failures",
            "SELECT lower(subject) FROM login_failures ORDER BY subject",
            "SELECT subject FROM login_failures WHERE lower(subject) = 'é'",
        ] {
            let rows = try both.rows(sql)
            #expect(rows.postgres == rows.sqlite, "\(sql)")
        }
    }

    @Test(
        """
        the writer lock: once a write transaction's first statement ran, no other can begin writing; COMMIT releases it; \
        a write transaction that ran no statement took no lock
        """
    )
    func writerLock() throws {
        let url = try PostgresServer.freshDatabaseURL()
        let first = try PostgresConnection(url: url)
        try BothSchemas.migrate(first)
        let second = try PostgresConnection(url: url)
        let tryLock = "SELECT pg_try_advisory_xact_lock(?1)"
        try first.transaction(.immediate) { _ in
            // BEGIN and the lock wait for the first statement (one round trip for the three).
            let free = try second.transaction(.deferred) { c in try c.scalar(tryLock, [.integer(PostgresConnection.writerLockKey)]) }
            #expect(free == .integer(1))
        }
        try first.transaction(.immediate) { c in
            _ = try c.scalar("SELECT 1")
            // Inside the first writer's transaction the lock is taken: another session cannot get it.
            let refused = try second.transaction(.deferred) { c in try c.scalar(tryLock, [.integer(PostgresConnection.writerLockKey)]) }
            #expect(refused == .integer(0))
        }
        let granted = try second.transaction(.deferred) { c in try c.scalar(tryLock, [.integer(PostgresConnection.writerLockKey)]) }
        #expect(granted == .integer(1))
    }
}
