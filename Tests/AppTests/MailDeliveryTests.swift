import Domain
import Foundation
import Logging
import Outbound
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Outbound mail end to end (docs/mail.md): API → mail_outbox (in the change's transaction) →
/// `MailDispatcher.runOnce` → `SMTPMailSender` → a real `OutboundClient` speaking SMTP + STARTTLS +
/// AUTH → `Tests/Fakes/smtp_receiver.py` (aiosmtpd, the test CA's certificate). Links are taken from
/// the mails that arrived and used against the API.
@Suite("Mail — verification, invitations, retries over real SMTP")
struct MailDeliveryTests {
    /// A running aiosmtpd with its CA and spool directory.
    final class SMTPFake: Sendable {
        static let user = "chronir"
        static let password = "s3cret-smtp-password"
        let authority: TestCertificateAuthority
        let spool: TemporaryDirectory
        let service: PythonService
        var port: Int { service.ports[0] }

        /// Starts the receiver on `port` (0: ephemeral); the first `failFirst` recipients get 451.
        static func start(
            port: Int = 0, failFirst: Int = 0, mode: String = "starttls", authority: TestCertificateAuthority? = nil
        ) async throws -> SMTPFake {
            try await blocking {
                let authority = try authority ?? TestCertificateAuthority()
                let spool = TemporaryDirectory()
                let service = try PythonService(
                    script: "smtp_receiver.py",
                    arguments: [
                        authority.serverCertificatePath, authority.serverKeyPath, spool.path, user, password, String(port),
                        String(failFirst), mode,
                    ])
                return SMTPFake(authority: authority, spool: spool, service: service)
            }
        }

        private init(authority: TestCertificateAuthority, spool: TemporaryDirectory, service: PythonService) {
            self.authority = authority
            self.spool = spool
            self.service = service
        }

        deinit { service.stop() }

        /// Every mail received, in order.
        func received() throws -> [[String: Any]] {
            let names = try FileManager.default.contentsOfDirectory(atPath: spool.path).filter { $0.hasSuffix(".json") }.sorted()
            return try names.map { name in
                let data = try Data(contentsOf: URL(fileURLWithPath: spool.file(named: name)))
                return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
            }
        }
    }

    static let quiet = Logger.quiet

    static func mailConfig(port: Int, scheme: String = "smtp") -> MailConfiguration {
        var config = MailConfiguration()
        config.smtpURL = "\(scheme)://127.0.0.1:\(port)"
        config.from = "chronir@mail.test"
        config.username = SMTPFake.user
        config.password = SMTPFake.password
        return config
    }

    /// A harness whose mail goes to `port`, and a dispatcher trusting `authority`.
    static func harness(
        port: Int, authority: TestCertificateAuthority, tier: Tier = .free, scheme: String = "smtp"
    ) throws -> (AppHarness, MailDispatcher, OutboundClient) {
        let h = try AppHarness(defaultTier: tier) { $0.mail = mailConfig(port: port, scheme: scheme) }
        let client = OutboundClient(
            configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: true), caFile: authority.certificatePath))
        let sender = try #require(SMTPMailSender(config: mailConfig(port: port, scheme: scheme), client: client))
        let dispatcher = MailDispatcher(
            database: h.database, clock: h.clock, logger: quiet, sender: sender, publicBaseURL: h.app.services.config.publicBaseURL,
            unitRandom: { 0.5 })
        return (h, dispatcher, client)
    }

    /// The token of the one link in `mail`'s text (`…/verify-email#<token>` or `…/reset-password#<token>`).
    static func token(in mail: [String: Any], page: String) -> String? {
        guard let data = mail["data"] as? String, let range = data.range(of: "/\(page)#") else { return nil }
        return String(data[range.upperBound...].prefix { !$0.isWhitespace })
    }

    @Test("registration mails a verification link over STARTTLS + AUTH; the link verifies once; the body is then cleared")
    func verification() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        let (token, _) = try await h.register("ana@example.com", verified: false)
        #expect(await h.send(.get, "/v1/me", token: token).json["email_verified"] as? Bool == false)
        let round = try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        #expect(round.sent == 1 && round.claimed == 1)
        let mails = try fake.received()
        try #require(mails.count == 1)
        let mail = mails[0]
        #expect(mail["rcpt_tos"] as? [String] == ["ana@example.com"])
        #expect(mail["mail_from"] as? String == "chronir@mail.test")
        #expect(mail["tls"] as? Bool == true, "STARTTLS before MAIL FROM")
        #expect(mail["auth"] as? String == SMTPFake.user)
        let text = try #require(mail["data"] as? String)
        #expect(text.contains("Subject: Confirm your email address for Chronir"))
        #expect(text.contains("Content-Type: text/plain; charset=utf-8"))
        let link = try #require(Self.token(in: mail, page: "verify-email"))
        #expect(link.utf8.count == 43, "256 bits, base64url")
        // Stored hashed only: the raw token is nowhere in the database, and the mail's text is gone.
        let stored = try await h.database.read { db in
            (
                try db.scalar("SELECT COUNT(*) FROM mail_outbox WHERE body IS NOT NULL", []),
                try db.scalar("SELECT state FROM mail_outbox", [])
            )
        }
        #expect(stored.0 == .integer(0))
        #expect(stored.1 == .text("sent"))

        let verified = await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"\#(link)"}"#)
        #expect(verified.status == 200)
        #expect(verified.json["email_verified"] as? Bool == true)
        #expect(await h.send(.get, "/v1/me", token: token).json["email_verified"] as? Bool == true)
        let again = await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"\#(link)"}"#)
        #expect(again.status == 400 && again.errorName == "TOKEN_INVALID", "one use")
        #expect(await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"nope"}"#).errorName == "TOKEN_INVALID")
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).claimed == 0, "sent once")
    }

    @Test("smtps:// (implicit TLS) delivers; a server that offers no STARTTLS never gets the mail or the password in clear")
    func transportSecurity() async throws {
        let smtps = try await SMTPFake.start(mode: "smtps")
        let (h, dispatcher, client) = try Self.harness(port: smtps.port, authority: smtps.authority, scheme: "smtps")
        defer { client.close() }
        _ = try await h.register("tls@example.com", verified: false)
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).sent == 1)
        #expect(try smtps.received().first?["tls"] as? Bool == true)

        let plain = try await SMTPFake.start(mode: "plain")
        let (p, plainDispatcher, plainClient) = try Self.harness(port: plain.port, authority: plain.authority)
        defer { plainClient.close() }
        _ = try await p.register("clear@example.com", verified: false)
        let round = try await plainDispatcher.runOnce(at: p.clock.nowMilliseconds())
        #expect(round.retried == 1 && round.sent == 0, "refused before MAIL FROM or AUTH, retried later")
        #expect(try plain.received().isEmpty)
        let error = try await p.database.read { db in try db.queryOne("SELECT last_error FROM mail_outbox", [])?.string("last_error") }
        #expect(error?.contains("TLS") == true, "\(error ?? "")")
    }

    @Test("a verification link expires after 24 h; resend is limited to one a minute; a resent link works")
    func expiryAndResend() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        let (token, _) = try await h.register("bo@example.com", verified: false)
        let limited = await h.send(.post, "/v1/me/email/verification", token: token)
        #expect(limited.status == 429 && limited.header("retry-after") == "60")
        try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        let firstMail = try #require(try fake.received().first)
        let first = try #require(Self.token(in: firstMail, page: "verify-email"))
        h.clock.advance(by: MailTemplates.verificationLifetimeMilliseconds)
        #expect(await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"\#(first)"}"#).errorName == "TOKEN_INVALID")
        let resent = await h.send(.post, "/v1/me/email/verification", token: token)
        #expect(resent.status == 202 && resent.json["status"] as? String == "sent")
        try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        let lastMail = try #require(try fake.received().last)
        let second = try #require(Self.token(in: lastMail, page: "verify-email"))
        #expect(await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"\#(second)"}"#).status == 200)
        let done = await h.send(.post, "/v1/me/email/verification", token: token)
        #expect(done.status == 200 && done.json["status"] as? String == "already_verified")
    }

    @Test("the red team's takeover fails: an unverified account that registered an invited address cannot accept")
    func invitationTakeover() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority, tier: .premium)
        defer { client.close() }
        let owner = try await h.register("owner@example.com")
        let groupID = try await h.createGroup(token: owner.token)
        try await h.expect(
            201, .post, "/v1/groups/\(groupID)/invitations", json: #"{"invitee_email":"puppet-mail@example.com","role":"admin"}"#,
            token: owner.token)
        // The attacker registers the invited address (without its mailbox) and finds the invitation.
        let attacker = try await h.register("puppet-mail@example.com", verified: false)
        let listed = await h.send(.get, "/v1/invitations", token: attacker.token)
        let id = try #require((listed.json["invitations"] as? [[String: Any]])?.first?["id"] as? String)
        let refused = await h.send(.post, "/v1/invitations/\(id)/accept", token: attacker.token)
        #expect(refused.status == 403)
        #expect(refused.errorName == "EMAIL_NOT_VERIFIED")
        let detail = await h.send(.get, "/v1/groups/\(groupID)", token: owner.token)
        #expect((detail.json["members"] as? [Any])?.count == 1, "still only the owner")

        // The mailbox's real owner gets two mails: the invitation and the verification link (and the
        // group's owner one for their own registration).
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).sent == 3)
        let mails = try fake.received().filter { ($0["rcpt_tos"] as? [String]) == ["puppet-mail@example.com"] }
        let invitation = try #require(mails.first { ($0["data"] as? String)?.contains("You are invited") == true })
        #expect((invitation["data"] as? String)?.contains("http://127.0.0.1:8080/") == true)
        let link = try #require(mails.compactMap { Self.token(in: $0, page: "verify-email") }.first)
        // With the link (i.e. with the mailbox), acceptance works.
        #expect(await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"\#(link)"}"#).status == 200)
        #expect(await h.send(.post, "/v1/invitations/\(id)/accept", token: attacker.token).status == 200)
    }

    @Test("an invitation mail carries nothing the inviter wrote; 3 invitation mails an hour per address, from any inviter")
    func invitationMailAndCap() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority, tier: .premium)
        defer { client.close() }
        let owner = try await h.register("owner@example.com")
        let other = try await h.register("other@example.com")
        let lure = "Claim your prize at https://evil.example/win"
        var groups: [String] = []
        for (index, token) in [owner.token, owner.token, other.token, other.token].enumerated() {
            groups.append(try await h.createGroup(token: token, name: index == 0 ? lure : "Group \(index)"))
        }
        func invite(_ group: String, _ token: String, _ address: String) async -> Reply {
            await h.send(.post, "/v1/groups/\(group)/invitations", json: #"{"invitee_email":"\#(address)","role":"member"}"#, token: token)
        }
        for (group, token) in zip(groups.prefix(3), [owner.token, owner.token, other.token]) {
            #expect(await invite(group, token, "victim@example.com").status == 201)
        }
        let capped = await invite(groups[3], other.token, "victim@example.com")
        #expect(capped.status == 429 && capped.errorName == "RATE_LIMITED", "\(capped.text)")
        #expect(Int(capped.header("Retry-After") ?? "") == 3_600)
        #expect(await invite(groups[3], other.token, "someone@example.com").status == 201, "another address is not capped")
        let invitations = try await h.database.read { db in
            try db.scalar("SELECT COUNT(*) FROM invitations WHERE invitee_email = 'victim@example.com'", [])
        }
        #expect(invitations == .integer(3), "the refused invitation was not created")

        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).sent == 4 + 2, "4 invitations, 2 registrations")
        let mails = try fake.received().filter { ($0["rcpt_tos"] as? [String]) == ["victim@example.com"] }
        #expect(mails.count == 3)
        for mail in mails {
            let text = try #require(mail["data"] as? String)
            #expect(text.contains("invited this address to a group") && text.contains("http://127.0.0.1:8080/"))
            #expect(!text.contains("evil.example") && !text.contains("prize") && !text.contains("Group "), "\(text)")
        }
        h.clock.advance(by: 3_600_000)
        #expect(await invite(groups[3], other.token, "victim@example.com").status == 201, "an hour later")
    }

    @Test("a mail server that is down is retried with back-off; 451 is retried, 550 fails; nothing is lost")
    func retries() async throws {
        let authority = try await blocking { try TestCertificateAuthority() }
        let port = try Self.freePort()
        let (h, dispatcher, client) = try Self.harness(port: port, authority: authority)
        defer { client.close() }
        _ = try await h.register("cy@example.com", verified: false)
        let start = h.clock.nowMilliseconds()
        let down = try await dispatcher.runOnce(at: start)
        #expect(down.retried == 1 && down.sent == 0)
        let next = try await h.database.read { db in try db.scalar("SELECT next_attempt_ms FROM mail_outbox", []) }
        #expect(next == .integer(start + 3_750), "5 s step, jitter ½ + ½·0.5")
        #expect(try await dispatcher.runOnce(at: start + 3_749).claimed == 0, "not before its time")

        // The server comes up where it was down, refusing the first recipient with 451.
        let fake = try await SMTPFake.start(port: port, failFirst: 1, authority: authority)
        let transient = try await dispatcher.runOnce(at: start + 3_750)
        #expect(transient.retried == 1)
        let error = try await h.database.read { db in try db.queryOne("SELECT last_error FROM mail_outbox", [])?.string("last_error") }
        #expect(error?.contains("451") == true)
        #expect(try await dispatcher.runOnce(at: start + 60_000).sent == 1)
        #expect(try fake.received().count == 1)
        let arrived = try #require(try fake.received().first)
        #expect(Self.token(in: arrived, page: "verify-email") != nil)

        // A permanent refusal: failed, not retried, body cleared.
        _ = try await h.register("dee@reject.test", verified: false)
        let rejected = try await dispatcher.runOnce(at: h.clock.nowMilliseconds() + 60_000)
        #expect(rejected.failed == 1)
        let states = try await h.database.read { db in try MailOutbox.counts(on: db) }
        #expect(states == [.sent: 1, .failed: 1])
    }

    @Test("the sender refuses a recipient outside the address grammar without connecting: failed, nothing delivered to a@x")
    func senderRefusesOddRecipients() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        let now = h.clock.nowMilliseconds()
        try await h.database.write { db in
            for recipient in ["a(c)@x.example", "\"a b\"@x.example", "a@x.example;b@y.example", "ok@x.example"] {
                try MailOutbox.enqueue(
                    MailContent(kind: .verifyEmail, recipient: recipient, subject: "s", body: "b", userID: nil, expiresAt: now + 60_000),
                    sendable: true, at: now, on: db)
            }
        }
        let round = try await dispatcher.runOnce(at: now)
        #expect(round.claimed == 4 && round.failed == 3 && round.sent == 1, "\(round)")
        #expect(try fake.received().map { $0["rcpt_tos"] as? [String] } == [["ok@x.example"]])
        let errors = try await h.database.read { db in
            try db.query("SELECT last_error FROM mail_outbox WHERE state = 'failed'", []).compactMap { $0.string("last_error") }
        }
        #expect(errors.count == 3 && errors.allSatisfy { $0.contains("recipient address refused") }, "\(errors)")
    }

    @Test("changing the address takes effect only when the new address's link is used")
    func changeEmail() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        let ana = try await h.register("ana@example.com")
        _ = try await h.register("taken@example.com")
        h.clock.advance(by: 60_000)  // past the one-a-minute verification limit registration used
        let wrong = await h.send(.put, "/v1/me/email", json: #"{"email":"new@example.com","password":"wrong password"}"#, token: ana.token)
        #expect(wrong.status == 401)
        let asked = await h.send(
            .put, "/v1/me/email", json: #"{"email":"New@Example.com","password":"correct horse"}"#, token: ana.token)
        #expect(asked.status == 202 && asked.json["email"] as? String == "new@example.com")
        #expect(await h.send(.get, "/v1/me", token: ana.token).json["email"] as? String == "ana@example.com")
        // A taken address answers the same (its owner is told by mail instead).
        h.clock.advance(by: 60_000)
        let taken = await h.send(
            .put, "/v1/me/email", json: #"{"email":"taken@example.com","password":"correct horse"}"#, token: ana.token)
        #expect(taken.status == 202 && taken.json["status"] as? String == "sent")
        let repeated = await h.send(
            .put, "/v1/me/email", json: #"{"email":"taken@example.com","password":"correct horse"}"#, token: ana.token)
        #expect(repeated.text == taken.text, "the same answer; no second notice within the hour")
        // Two verification mails from registration, the change link, the notice to taken@.
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).sent == 4)
        let mails = try fake.received()
        let change = try #require(mails.first { ($0["rcpt_tos"] as? [String]) == ["new@example.com"] })
        let notice = try #require(
            mails.first {
                ($0["rcpt_tos"] as? [String]) == ["taken@example.com"] && ($0["data"] as? String)?.contains("already has one") == true
            })
        #expect(Self.token(in: notice, page: "verify-email") == nil)
        let link = try #require(Self.token(in: change, page: "verify-email"))
        let done = await h.send(.post, "/v1/auth/verify-email", json: #"{"token":"\#(link)"}"#)
        #expect(done.status == 200 && done.json["email"] as? String == "new@example.com" && done.json["email_verified"] as? Bool == true)
        #expect(await h.login("new@example.com").status == 200)
        #expect(await h.login("ana@example.com").status == 401)
    }

    @Test("password reset: one answer for known and unknown addresses; the link sets the password once and ends every session")
    func passwordReset() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        let first = try await h.register("ana@example.com")
        let second = try #require(await h.login("ana@example.com").json["token"] as? String)
        let known = await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"Ana@Example.com"}"#)
        let unknown = await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"nobody@example.com"}"#)
        #expect(known.status == 202 && unknown.status == 202)
        #expect(known.text == unknown.text, "same status, same body")
        // Equal writes: each request wrote the same — one textless request row, no token — before its answer.
        let written = try await h.database.read { db in
            (
                try db.query("SELECT recipient, state, body, user_id, subject FROM mail_outbox ORDER BY id", [])
                    .filter { $0.string("subject") == MailTemplates.passwordResetSubject },
                try db.scalar("SELECT COUNT(*) FROM email_tokens WHERE purpose = 'password_reset'", [])
            )
        }
        #expect(written.0.map { $0.string("recipient") } == ["ana@example.com", "nobody@example.com"])
        #expect(written.0.allSatisfy { $0.string("state") == "pending" && $0.string("body") == nil && $0.string("user_id") == nil })
        #expect(written.1 == .integer(0), "no token until the dispatcher prepares the mail")
        let round = try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        #expect(round.dropped == 1, "\(round)")
        let dropped = try await h.database.read { db in
            try db.queryOne("SELECT state, last_error FROM mail_outbox WHERE recipient = 'nobody@example.com'", [])
        }
        #expect(dropped?.string("state") == "failed" && dropped?.string("last_error")?.contains("no active account") == true)
        let mails = try fake.received()
        #expect(!mails.contains { ($0["rcpt_tos"] as? [String]) == ["nobody@example.com"] }, "no mail to an address without an account")
        let resetMail = try #require(mails.first { Self.token(in: $0, page: "reset-password") != nil })
        #expect(resetMail["rcpt_tos"] as? [String] == ["ana@example.com"])
        let link = try #require(Self.token(in: resetMail, page: "reset-password"))

        #expect(await h.send(.post, "/v1/auth/password-reset/confirm", json: #"{"token":"\#(link)","password":"short"}"#).status == 422)
        let done = await h.send(.post, "/v1/auth/password-reset/confirm", json: #"{"token":"\#(link)","password":"a new password"}"#)
        #expect(done.status == 204)
        #expect(await h.send(.get, "/v1/me", token: first.token).status == 401, "every session revoked")
        #expect(await h.send(.get, "/v1/me", token: second).status == 401)
        #expect(await h.login("ana@example.com").status == 401, "the old password no longer works")
        #expect(await h.login("ana@example.com", password: "a new password").status == 200)
        let again = await h.send(.post, "/v1/auth/password-reset/confirm", json: #"{"token":"\#(link)","password":"another one!"}"#)
        #expect(again.status == 400 && again.errorName == "TOKEN_INVALID", "one use")

        // The link lasts one hour.
        _ = await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"ana@example.com"}"#)
        #expect(await Self.queued(h, kind: .passwordReset, count: 3))
        try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        let late = try #require(try fake.received().last.flatMap { Self.token(in: $0, page: "reset-password") })
        h.clock.advance(by: MailTemplates.resetLifetimeMilliseconds)
        #expect(
            await h.send(.post, "/v1/auth/password-reset/confirm", json: #"{"token":"\#(late)","password":"a newer password"}"#).errorName
                == "TOKEN_INVALID")
    }

    @Test("reset requests are limited per address (3 an hour), known or not, and per network")
    func resetLimits() async throws {
        let fake = try await SMTPFake.start()
        let (h, _, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        _ = try await h.register("ana@example.com")
        for address in ["ana@example.com", "nobody@example.com"] {
            for _ in 0..<3 {
                #expect(await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"\#(address)"}"#).status == 202)
            }
            let limited = await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"\#(address)"}"#)
            #expect(limited.status == 429 && limited.header("retry-after") == "3600")
        }
        for index in 0..<14 {
            #expect(await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"n\#(index)@example.com"}"#).status == 202)
        }
        let network = await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"last@example.com"}"#)
        #expect(network.status == 429, "20 an hour per client network")
        let elsewhere = await h.send(.post, "/v1/auth/password-reset", json: #"{"email":"last@example.com"}"#, remoteAddress: "192.0.2.7")
        #expect(elsewhere.status == 202)
    }

    @Test("with mail configured, registering a taken address answers exactly like a new one; the owner is told by mail")
    func registrationWithoutEnumeration() async throws {
        let fake = try await SMTPFake.start()
        let (h, dispatcher, client) = try Self.harness(port: fake.port, authority: fake.authority)
        defer { client.close() }
        let body = #"{"email":"ana@example.com","password":"correct horse","display_name":"Ana"}"#
        let new = await h.send(.post, "/v1/auth/register", json: body)
        let taken = await h.send(.post, "/v1/auth/register", json: body.replacingOccurrences(of: "correct horse", with: "other password"))
        #expect(new.status == 202 && taken.status == 202)
        #expect(new.text == taken.text, "same status, same body")
        #expect(new.json["token"] == nil, "no session either way: the client signs in")
        _ = await h.send(.post, "/v1/auth/register", json: body)
        try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        let mails = try fake.received()
        #expect(mails.count == 2, "the verification link, and one notice an hour to the owner")
        #expect(mails.contains { ($0["data"] as? String)?.contains("which already has one") == true })
        #expect(await h.login("ana@example.com").status == 200, "the first registration's password")
        #expect(await h.login("ana@example.com", password: "other password").status == 401, "the second changed nothing")
    }

    /// Waits (bounded) until `count` mails of `kind` are in the outbox.
    static func queued(_ h: AppHarness, kind: MailKind, count: Int) async -> Bool {
        let database = h.database
        return await eventually {
            (try? database.readSync { db in
                try db.scalar("SELECT COUNT(*) FROM mail_outbox WHERE kind = ?1", [.text(kind.rawValue)])
            }) == .integer(Int64(count))
        }
    }

    /// A loopback port nothing listens on (bound and closed at once).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw AppHarness.HarnessError.unexpected("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Without `--smtp-url`: the server runs, mails are recorded unsendable (no text kept), the API says
/// so, and `chronir-admin users verify-email` stands in for the link.
@Suite("Mail — without an SMTP server")
struct MailOffTests {
    @Test("mails are recorded unsendable; resend answers unsendable; an admin-verified account accepts invitations")
    func unsendable() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let owner = try await h.register("owner@example.com")
        let groupID = try await h.createGroup(token: owner.token)
        try await h.expect(
            201, .post, "/v1/groups/\(groupID)/invitations", json: #"{"invitee_email":"eve@example.com"}"#, token: owner.token)
        let eve = try await h.register("eve@example.com", verified: false)
        let rows = try await h.database.read { db in
            try db.query("SELECT kind, state, body FROM mail_outbox ORDER BY id", [])
        }
        #expect(rows.map { $0.string("state") } == ["unsendable", "unsendable", "unsendable"])
        #expect(rows.allSatisfy { $0.string("body") == nil })
        h.clock.advance(by: 60_000)
        let resend = await h.send(.post, "/v1/me/email/verification", token: eve.token)
        #expect(resend.status == 202 && resend.json["status"] as? String == "unsendable")
        let id = try #require(
            (await h.send(.get, "/v1/invitations", token: eve.token).json["invitations"] as? [[String: Any]])?.first?["id"] as? String)
        #expect(await h.send(.post, "/v1/invitations/\(id)/accept", token: eve.token).errorName == "EMAIL_NOT_VERIFIED")
        // The operator's stand-in (what `chronir-admin users verify-email` runs).
        let now = h.clock.nowMilliseconds()
        try await h.database.write { db in _ = try AccountStore.markEmailVerified(userID: eve.id, actor: .admin, at: now, on: db) }
        #expect(await h.send(.post, "/v1/invitations/\(id)/accept", token: eve.token).status == 200)
    }
}
