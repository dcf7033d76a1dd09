import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Every group/invitation endpoint × every relation to the group → the expected status (and error
/// name). The table is data (one line per endpoint); `AuthorizationMatrix` runs each cell on a
/// fresh `GroupFixture`, so mutations of one cell cannot leak into another.
@Suite("Authorization matrix — endpoints × {owner, admin, member, removed, left, outsider, anonymous}")
struct AuthorizationMatrixTests {
    /// Statuses in `roles` order: owner, admin, member, removed, left, outsider, anonymous.
    static let matrix = AuthorizationMatrix(
        roles: [.owner, .admin, .member, .removed, .left, .outsider, .anonymous],
        endpoints: [
            .init("POST /v1/groups", [201, 201, 201, 201, 201, 201, 401]) {
                await $0.send(.post, "/v1/groups", json: #"{"name":"Team"}"#)
            },
            .init("GET /v1/groups", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/groups") },
            .init("GET /v1/groups/{id}", [200, 200, 200, 404, 404, 404, 401]) { await $0.send(.get, $0.group) },
            .init("PATCH /v1/groups/{id}", [200, 200, 403, 404, 404, 404, 401]) {
                await $0.send(.patch, $0.group, json: #"{"name":"Renamed"}"#)
            },
            .init("DELETE /v1/groups/{id}", [204, 403, 403, 404, 404, 404, 401]) { await $0.send(.delete, $0.group) },
            .init("PATCH /v1/groups/{id}/members/{user_id}", [200, 403, 403, 404, 404, 404, 401]) {
                await $0.send(.patch, "\($0.group)/members/\($0.fixture.member.id)", json: #"{"role":"admin"}"#)
            },
            .init("POST /v1/groups/{id}/transfer", [200, 403, 403, 404, 404, 404, 401]) {
                await $0.send(.post, "\($0.group)/transfer", json: #"{"user_id":"\#($0.fixture.member.id)"}"#)
            },
            .init("DELETE /v1/groups/{id}/members/{other}", [204, 204, 403, 404, 404, 404, 401]) {
                await $0.send(.delete, "\($0.group)/members/\($0.fixture.other.id)")
            },
            .init("DELETE /v1/groups/{id}/members/{self}", [409, 204, 204, 404, 404, 404, 401]) {
                await $0.send(.delete, "\($0.group)/members/\($0.actor?.id ?? $0.fixture.member.id)")
            },
            .init("GET /v1/groups/{id}/activity", [200, 200, 200, 404, 404, 404, 401]) { await $0.send(.get, "\($0.group)/activity") },
            .init("GET /v1/groups/{id}/invite-code", [200, 200, 403, 404, 404, 404, 401]) {
                await $0.send(.get, "\($0.group)/invite-code")
            },
            .init("POST /v1/groups/{id}/invite-code", [201, 201, 403, 404, 404, 404, 401]) {
                await $0.send(.post, "\($0.group)/invite-code")
            },
            .init("DELETE /v1/groups/{id}/invite-code", [204, 204, 403, 404, 404, 404, 401]) {
                await $0.send(.delete, "\($0.group)/invite-code")
            },
            // A live code older than the caller's removal or departure: 403 naming why.
            .init("POST /v1/join", [200, 200, 200, 403, 403, 200, 401], errors: [403: "REJOIN_NEEDS_NEW_INVITE"]) {
                await $0.send(.post, "/v1/join", json: #"{"code":"\#($0.fixture.code)"}"#)
            },
            // The landing page's preview: anyone holding the live code, signed in or not (the rejoin rule
            // is the join's to answer); a rotated-away code is the join's 404 for everyone.
            .init("GET /v1/join/{code}", [200, 200, 200, 200, 200, 200, 200]) {
                await $0.send(.get, "/v1/join/\($0.fixture.code)")
            },
            .init("GET /v1/join/{old code}", [404, 404, 404, 404, 404, 404, 404], errors: [404: "INVITE_CODE_INVALID"]) { c in
                _ = try await c.h.inviteCode(c.fixture.groupID, token: c.fixture.owner.token)
                return await c.send(.get, "/v1/join/\(c.fixture.code)")
            },
            .init("POST /v1/groups/{id}/invitations", [201, 201, 403, 404, 404, 404, 401]) {
                await $0.send(.post, "\($0.group)/invitations", json: #"{"role":"member"}"#)
            },
            .init("GET /v1/groups/{id}/invitations", [200, 200, 403, 404, 404, 404, 401]) {
                await $0.send(.get, "\($0.group)/invitations")
            },
            .init("GET /v1/invitations", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/invitations") },
            .init("POST /v1/invitations/{token}/accept", [200, 200, 200, 200, 200, 200, 401]) { c in
                let created = try await c.h.expect(
                    201, .post, "\(c.group)/invitations", json: #"{"role":"member"}"#, token: c.fixture.owner.token)
                let link = try #require(created.json["token"] as? String)
                return await c.send(.post, "/v1/invitations/\(link)/accept")
            },
            // A link invitation's preview: whoever holds the token; by id it is nobody's.
            .init("GET /v1/invitations/{token}", [200, 200, 200, 200, 200, 200, 200]) { c in
                let created = try await c.h.expect(
                    201, .post, "\(c.group)/invitations", json: #"{"role":"member"}"#, token: c.fixture.owner.token)
                let link = try #require(created.json["token"] as? String)
                return await c.send(.get, "/v1/invitations/\(link)")
            },
            .init("GET /v1/invitations/{id}", [404, 404, 404, 404, 404, 404, 404]) { c in
                let created = try await c.h.expect(
                    201, .post, "\(c.group)/invitations", json: #"{"role":"member"}"#, token: c.fixture.owner.token)
                let id = try #require(created.object("invitation")?["id"] as? String)
                return await c.send(.get, "/v1/invitations/\(id)")
            },
            .init("POST /v1/invitations/{id}/decline", [404, 404, 404, 404, 404, 200, 401]) { c in
                let created = try await c.h.expect(
                    201, .post, "\(c.group)/invitations", json: #"{"invitee_email":"\#(c.fixture.outsider.email)"}"#,
                    token: c.fixture.owner.token)
                let id = try #require(created.object("invitation")?["id"] as? String)
                return await c.send(.post, "/v1/invitations/\(id)/decline")
            },
            .init("DELETE /v1/invitations/{id}", [204, 204, 403, 404, 404, 404, 401]) { c in
                let created = try await c.h.expect(
                    201, .post, "\(c.group)/invitations", json: #"{"role":"member"}"#, token: c.fixture.admin.token)
                let id = try #require(created.object("invitation")?["id"] as? String)
                return await c.send(.delete, "/v1/invitations/\(id)")
            },
            // Personal alarms: the owner's own alarm; every other account's `/v1/me/alarms/{alarm_id}` is
            // its own namespace, so the owner's id is not found there (never 403: no existence leak).
            .init("GET /v1/me/alarms", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/me/alarms") },
            .init("PUT /v1/me/alarms/{alarm_id}", [200, 201, 201, 201, 201, 201, 401]) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.put, Self.personalAlarm, json: Self.personalAlarmBody)
            },
            .init("GET /v1/me/alarms/{alarm_id}", [200, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.get, Self.personalAlarm)
            },
            .init("PATCH /v1/me/alarms/{alarm_id}", [200, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.patch, Self.personalAlarm, json: #"{"title":"Mine now"}"#)
            },
            .init("DELETE /v1/me/alarms/{alarm_id}", [204, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.delete, Self.personalAlarm)
            },
            .init("GET /v1/me/alarms/{alarm_id}/conflicts", [200, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.get, "\(Self.personalAlarm)/conflicts")
            },
            // Personal completions: only the owner of the alarm records or lists them; elsewhere the id is unknown.
            .init(
                "POST /v1/me/alarms/{alarm_id}/completions", [201, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(
                    .post, "\(Self.personalAlarm)/completions", json: #"{"status":"completed","scheduled_at":"2026-02-06T10:00:00Z"}"#)
            },
            .init(
                "GET /v1/me/alarms/{alarm_id}/completions", [200, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.get, "\(Self.personalAlarm)/completions")
            },
            .init("GET /v1/me/completions", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/me/completions") },
            // Personal-alarm attachments (docs/attachments.md#who-may-do-what): the account alone; elsewhere the
            // alarm id is unknown, so every other caller gets 404 ALARM_NOT_FOUND (never 403).
            .init(
                "POST /v1/me/alarms/{alarm_id}/attachments", [201, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                try await c.ownersPersonalAlarm()
                return await c.h.sendBytes(
                    .post, "\(Self.personalAlarm)/attachments", body: SampleMedia.png(width: 40, height: 30),
                    contentType: "image/png", token: c.actor?.token)
            },
            .init(
                "GET /v1/me/alarms/{alarm_id}/attachments", [200, 404, 404, 404, 404, 404, 401], errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                try await c.ownersPersonalAlarm()
                return await c.send(.get, "\(Self.personalAlarm)/attachments")
            },
            .init(
                "GET /v1/me/alarms/{alarm_id}/attachments/{attachment_id}", [200, 404, 404, 404, 404, 404, 401],
                errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                await c.send(.get, try await c.ownersPersonalAttachment())
            },
            .init(
                "GET /v1/me/alarms/{alarm_id}/attachments/{attachment_id}/thumbnail", [200, 404, 404, 404, 404, 404, 401],
                errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                await c.send(.get, try await c.ownersPersonalAttachment() + "/thumbnail")
            },
            .init(
                "DELETE /v1/me/alarms/{alarm_id}/attachments/{attachment_id}", [204, 404, 404, 404, 404, 404, 401],
                errors: [404: "ALARM_NOT_FOUND"]
            ) { c in
                await c.send(.delete, try await c.ownersPersonalAttachment())
            },
            // Settings: every account its own document.
            // Every account reads its own list; what it holds (only live memberships' groups) is
            // SharedAlarmControlsTests' matter.
            .init("GET /v1/me/shared-alarms", [200, 200, 200, 200, 200, 200, 401]) {
                await $0.send(.get, "/v1/me/shared-alarms?state=upcoming&assigned=me")
            },
            .init("GET /v1/me/settings", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/me/settings") },
            .init("PATCH /v1/me/settings", [200, 200, 200, 200, 200, 200, 401]) { c in
                await c.send(.patch, "/v1/me/settings", json: #"{"theme_mode":"dark"}"#)
            },
            .init("DELETE /v1/me", [204, 204, 204, 204, 204, 204, 401]) { await $0.send(.delete, "/v1/me") },
            // The fixture's accounts are verified (AppHarness.register): nothing to resend.
            .init("POST /v1/me/email/verification", [200, 200, 200, 200, 200, 200, 401]) {
                await $0.send(.post, "/v1/me/email/verification")
            },
            .init("PUT /v1/me/email", [202, 202, 202, 202, 202, 202, 401]) { c in
                c.h.clock.advance(by: 60_000)  // past the one-a-minute limit registration used
                return await c.send(.put, "/v1/me/email", json: #"{"email":"fresh@example.com","password":"correct horse"}"#)
            },
            // No session needed; the token is the credential: a used or unknown one is refused for everyone.
            .init("POST /v1/auth/verify-email", [400, 400, 400, 400, 400, 400, 400], errors: [400: "TOKEN_INVALID"]) {
                await $0.send(.post, "/v1/auth/verify-email", json: #"{"token":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#)
            },
            // Public and the same for everyone: the answer does not depend on who asks or whether the address exists.
            .init("POST /v1/auth/password-reset", [202, 202, 202, 202, 202, 202, 202]) {
                await $0.send(.post, "/v1/auth/password-reset", json: #"{"email":"\#($0.fixture.member.email)"}"#)
            },
            .init("POST /v1/auth/password-reset/confirm", [400, 400, 400, 400, 400, 400, 400], errors: [400: "TOKEN_INVALID"]) {
                await $0.send(
                    .post, "/v1/auth/password-reset/confirm",
                    json: #"{"token":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","password":"a new password"}"#)
            },
            // A user's own sessions: nobody's relation to the group matters, only whose session it is.
            .init("GET /v1/me/sessions", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/me/sessions") },
            .init("DELETE /v1/me/sessions/{id}", [204, 404, 404, 404, 404, 404, 401]) { c in
                // The owner's session: the owner signs it out, everyone else gets 404 (no existence leak).
                let listed = try await c.h.expect(200, .get, "/v1/me/sessions", token: c.fixture.owner.token)
                let sessions = try #require(listed.json["sessions"] as? [[String: Any]])
                let id = try #require(sessions.first?["id"] as? String)
                return await c.send(.delete, "/v1/me/sessions/\(id)")
            },
            .init("POST /v1/me/sessions/revoke-others", [200, 200, 200, 200, 200, 200, 401]) {
                await $0.send(.post, "/v1/me/sessions/revoke-others")
            },
            .init("POST /v1/me/password", [200, 200, 200, 200, 200, 200, 401]) {
                await $0.send(
                    .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#)
            },
            // Sign in with Apple/Google. The fixture's server configures no provider: the same 404 for everyone,
            // signed in or not (OIDCTests covers the configured endpoint against a real key-set server).
            .init("POST /v1/auth/oidc", [404, 404, 404, 404, 404, 404, 404], errors: [404: "OIDC_PROVIDER_DISABLED"]) {
                await $0.send(.post, "/v1/auth/oidc", json: #"{"provider":"google","id_token":"a.b.c","nonce":"n-1"}"#)
            },
            // Public: which sign-in buttons a page shows (SignInProviderTests covers configured providers).
            .init("GET /v1/auth/providers", [200, 200, 200, 200, 200, 200, 200]) { await $0.send(.get, "/v1/auth/providers") },
            .init("GET /v1/me/identities", [200, 200, 200, 200, 200, 200, 401]) { await $0.send(.get, "/v1/me/identities") },
            .init("DELETE /v1/me/identities/{provider}", [204, 404, 404, 404, 404, 404, 401]) { c in
                // The owner's account has a Google identity (and a password): only the owner unlinks it, from their own account.
                let owner = c.fixture.owner.id
                let now = c.h.clock.nowMilliseconds()
                try await c.h.database.write { db in
                    try IdentityStore.link(provider: .google, subject: "g-owner", userID: owner, email: nil, at: now, on: db)
                }
                return await c.send(.delete, "/v1/me/identities/google")
            },
        ])

    static let personalAlarm = "/v1/me/alarms/3e8f6c91-b05d-4f4e-8ba2-4d5e6f708192"
    static let personalAlarmBody = #"{"title":"Vitamins",\#(SharedAlarmFixture.dailyTen)}"#

    @Test("the matrix covers every endpoint and every role")
    func complete() {
        #expect(Self.matrix.isComplete)
    }

    @Test("row", arguments: matrix.cells)
    func row(_ cell: MatrixCell<Void>) async throws {
        try await Self.matrix.run(cell)
    }
}

extension MatrixCall {
    /// The owner makes `AuthorizationMatrixTests.personalAlarm` and attaches a PNG to it; the attachment's path.
    func ownersPersonalAttachment() async throws -> String {
        try await ownersPersonalAlarm()
        let reply = await h.sendBytes(
            .post, "\(AuthorizationMatrixTests.personalAlarm)/attachments", body: SampleMedia.png(width: 40, height: 30),
            contentType: "image/png", token: fixture.owner.token)
        return "\(AuthorizationMatrixTests.personalAlarm)/attachments/\(try #require(reply.json["id"] as? String, "\(reply.text)"))"
    }

    /// The fixture's owner makes `AuthorizationMatrixTests.personalAlarm` (premium: personal sync allowed).
    func ownersPersonalAlarm() async throws {
        try await h.expect(
            201, .put, AuthorizationMatrixTests.personalAlarm, json: AuthorizationMatrixTests.personalAlarmBody,
            token: fixture.owner.token)
    }
}
