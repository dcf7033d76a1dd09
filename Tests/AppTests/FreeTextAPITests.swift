import Domain
import Foundation
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// Free text through the API: control, bidi and invisible characters in free text are 422
/// VALIDATION_FAILED naming the field, nothing is stored; accepted text is stored NFC.
@Suite("Free text through the API", .serialized)
struct FreeTextAPITests {
    func expectRefused(_ reply: Reply, field: String) {
        #expect(reply.status == 422, "\(reply.text)")
        #expect(reply.errorName == "VALIDATION_FAILED")
        #expect(reply.errorField == field)
    }

    @Test("display names: RLO, NUL, zero-width space are refused at registration and on PATCH /v1/me")
    func displayNames() async throws {
        let h = try AppHarness(defaultTier: .premium)
        for (i, name) in [#"Ana\u202Egpj.exe"#, #"Ana\u0000"#, #"Ana\u200B"#, #"\u001B[2J"#].enumerated() {
            let reply = await h.send(
                .post, "/v1/auth/register",
                json: #"{"email":"a\#(i)@example.com","password":"correct horse","display_name":"\#(name)"}"#)
            expectRefused(reply, field: "display_name")
        }
        #expect(try h.database.readSync { try $0.scalar("SELECT count(*) FROM users") } == .integer(0))
        let (token, _) = try await h.register("ana@example.com")
        expectRefused(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana\u2066x"}"#, token: token), field: "display_name")
        let renamed = await h.send(.patch, "/v1/me", json: #"{"display_name":"Zoe\u0308"}"#, token: token)
        #expect(renamed.status == 200)
        #expect(Array((renamed.json["display_name"] as? String ?? "").unicodeScalars).last?.value == 0xEB)
    }

    @Test("group names and descriptions; alarm titles and notes; completion notes")
    func groupAndAlarmText() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        expectRefused(await h.send(.post, "/v1/groups", json: #"{"name":"Home\u200D"}"#, token: f.owner.token), field: "name")
        expectRefused(
            await h.send(.patch, f.g, json: #"{"name":"\u202Eemoh"}"#, token: f.owner.token), field: "name")
        expectRefused(
            await h.send(.patch, f.g, json: #"{"description":"bell\u0007"}"#, token: f.owner.token), field: "description")
        let family = await h.send(.patch, f.g, json: #"{"name":"👨‍👩‍👧 Cafe\u0301","description":"two\nlines"}"#, token: f.owner.token)
        #expect(family.status == 200, "\(family.text)")
        #expect(family.json["name"] as? String == "👨‍👩‍👧 Café")

        let base =
            #"""
            "schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-01"},"times_of_day":[{"hour":10,"minute":0}],\#
            "timezone":"UTC"
            """#
        expectRefused(
            await h.send(.post, "\(f.g)/alarms", json: #"{"title":"\u001B]0;pwned\u0007",\#(base)}"#, token: f.owner.token),
            field: "title")
        expectRefused(
            await h.send(.post, "\(f.g)/alarms", json: #"{"title":"Cat","note":"a\u0085b",\#(base)}"#, token: f.owner.token),
            field: "note")
        let alarm = try await h.expect(
            201, .post, "\(f.g)/alarms", json: #"{"title":"Cat","note":"line 1\r\n\tline 2",\#(base)}"#, token: f.owner.token)
        let id = try #require((alarm.json["id"] as? String) ?? (alarm.object("alarm")?["id"] as? String))
        #expect(((alarm.json["note"] ?? alarm.object("alarm")?["note"]) as? String) == "line 1\n\tline 2")
        expectRefused(
            await h.send(
                .post, "\(f.g)/alarms/\(id)/completions", json: #"{"status":"completed","note":"ok\u0000"}"#,
                token: f.owner.token), field: "note")
    }
}
