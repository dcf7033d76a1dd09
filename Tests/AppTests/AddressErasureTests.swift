import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Account deletion leaves the address nowhere (docs/design.md#account-deletion): the account is
/// used the ways that store its address — registration, a verification resend, an email change, a
/// password reset, an email invitation to it sent with an Idempotency-Key, a failed sign-in — then
/// deleted, and every text and binary column of every table is searched for the address. Runs on
/// both engines (`CHRONIR_TEST_BACKEND`).
@Suite("Account deletion leaves the address nowhere")
struct AddressErasureTests {
    /// `(table, column, type)` of every column of the database's tables.
    static func columns(_ db: any SQLConnection) throws -> [(table: String, column: String, type: String)] {
        switch db.dialect {
        case .sqlite:
            let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .compactMap { $0.string("name") }
            return try tables.flatMap { table in
                try db.query("SELECT name, type FROM pragma_table_info(?1)", [.text(table)]).map {
                    (table, $0.string("name") ?? "", ($0.string("type") ?? "").lowercased())
                }
            }
        case .postgres:
            return try db.query(
                """
                SELECT c.table_name AS t, c.column_name AS c, c.data_type AS d FROM information_schema.columns c
                JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
                """
            ).map { ($0.string("t") ?? "", $0.string("c") ?? "", $0.string("d") ?? "") }
        }
    }

    /// `table.column` for every column whose value contains `text` in any row (binary columns
    /// searched for its UTF-8 bytes).
    static func holders(of text: String, in database: any SQLDatabase) throws -> [String] {
        try database.readSync { db in
            var found: [String] = []
            for (table, column, type) in try columns(db) {
                let condition: String
                switch db.dialect {
                case .sqlite:
                    condition = "instr(lower(CAST(\"\(column)\" AS TEXT)), ?1) > 0 OR instr(CAST(\"\(column)\" AS BLOB), ?2) > 0"
                case .postgres:
                    guard !["integer", "bigint", "boolean", "smallint", "double precision"].contains(type) else { continue }
                    condition =
                        type == "bytea"
                        ? "position(?2 in \"\(column)\") > 0 AND ?1 <> ''"
                        : "strpos(lower(\"\(column)\"::text), ?1) > 0 AND ?2 IS NOT NULL"
                }
                let hits = try db.scalar(
                    "SELECT count(*) FROM \"\(table)\" WHERE \(condition)", [.text(text.lowercased()), .blob(Array(text.utf8))])
                if case .integer(let n) = hits, n > 0 { found.append("\(table).\(column)") }
            }
            return found.sorted()
        }
    }

    @Test("register, verify, change address, reset, be invited, fail a sign-in, delete: neither address is left anywhere")
    func nowhere() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let address = "erase.me@example.com"
        let newAddress = "erase.me.new@example.com"
        let (token, _) = try await h.register(address, verified: false)
        let inviter = try await h.register("inviter@example.com")
        let groupID = try await h.createGroup(token: inviter.token)

        h.clock.advance(by: 120_000)
        try await h.expect(202, .post, "/v1/me/email/verification", token: token)
        h.clock.advance(by: 120_000)
        try await h.expect(202, .put, "/v1/me/email", json: #"{"email":"\#(newAddress)","password":"correct horse"}"#, token: token)
        try await h.expect(202, .post, "/v1/auth/password-reset", json: #"{"email":"\#(address)"}"#)
        let invite = await h.send(
            .post, "/v1/groups/\(groupID)/invitations", json: #"{"invitee_email":"\#(address)"}"#, token: inviter.token,
            headers: [("Idempotency-Key", "invite-1")])
        #expect(invite.status == 201, "\(invite.text)")
        #expect(await h.login(address, password: "wrong password").status == 401)

        let before = try Self.holders(of: address, in: h.database)
        #expect(before.contains("users.email"))
        #expect(before.contains("email_tokens.email"))
        #expect(before.contains("mail_outbox.recipient"))
        #expect(before.contains("idempotency_keys.body"))
        #expect(try Self.holders(of: newAddress, in: h.database).contains("email_tokens.email"))

        try await h.expect(204, .delete, "/v1/me", token: token)
        let left = try Self.holders(of: address, in: h.database)
        #expect(left == [], "\(left)")
        let leftNew = try Self.holders(of: newAddress, in: h.database)
        #expect(leftNew == [], "\(leftNew)")

        // The inviter's retry still answers as the first time did, with the address replaced.
        let replay = await h.send(
            .post, "/v1/groups/\(groupID)/invitations", json: #"{"invitee_email":"\#(address)"}"#, token: inviter.token,
            headers: [("Idempotency-Key", "invite-1")])
        #expect(replay.status == 201)
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(!replay.text.contains(address))
    }
}
