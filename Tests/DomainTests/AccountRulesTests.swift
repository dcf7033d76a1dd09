import Domain
import Testing

@Suite("Account rules")
struct AccountRulesTests {
    @Test("emails are trimmed and lowercased")
    func normalizesEmail() throws {
        #expect(try AccountRules.normalizeEmail("  Alice@Example.COM \n") == "alice@example.com")
    }

    @Test(
        "malformed emails name the field",
        arguments: [
            "", "   ", "alice", "alice@", "@example.com", "alice@example", "a b@example.com", "a@b@c.com",
            "alice@.example.com", "alice@example.com.",
        ])
    func rejectsEmail(raw: String) {
        #expect(throws: DomainError.self) { try AccountRules.normalizeEmail(raw) }
        do {
            _ = try AccountRules.normalizeEmail(raw)
        } catch {
            guard case .invalidField(let field, _) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(field == "email")
        }
    }

    @Test("an email of exactly the limit is accepted, one byte over is not; so for the local part (64) and a label (63)")
    func emailLimit() throws {
        let local = String(repeating: "a", count: EmailAddress.maxLocalPartBytes)
        let labels = [String(repeating: "b", count: 63), String(repeating: "c", count: 63)]
        let last = String(repeating: "d", count: AccountRules.maxEmailBytes - local.count - 1 - 63 - 1 - 63 - 1 - 4)
        let atLimit = local + "@" + (labels + [last, "com"]).joined(separator: ".")
        #expect(atLimit.utf8.count == AccountRules.maxEmailBytes)
        #expect(try AccountRules.normalizeEmail(atLimit) == atLimit)
        #expect(throws: DomainError.self) {
            try AccountRules.normalizeEmail(local + "@" + (labels + ["e" + last, "com"]).joined(separator: "."))
        }
        #expect(try AccountRules.normalizeEmail(local + "@example.com").hasPrefix(local))
        #expect(throws: DomainError.self) { try AccountRules.normalizeEmail("a" + local + "@example.com") }
        #expect(try AccountRules.normalizeEmail("a@" + String(repeating: "b", count: 63) + ".com").hasPrefix("a@"))
        #expect(throws: DomainError.self) { try AccountRules.normalizeEmail("a@" + String(repeating: "b", count: 64) + ".com") }
    }

    @Test(
        "the grammar stored and mailed: no comment, quoted string, route or second address",
        arguments: [
            "a(c)@x.example", "(c)a@x.example", "\"a b\"@x.example", "\"a\"@x.example", "a\\b@x.example", "a;b@x.example",
            "a:b@x.example", "a,b@x.example", "<a@x.example>", "a<b@x.example", "a>b@x.example", "a[b]@x.example",
            "a@[127.0.0.1]", "a@1.2.3.4", "a@x_y.example", "a@-x.example", "a@x-.example", "a@x..example", ".a@x.example",
            "a.@x.example", "a..b@x.example", "a@x.example;b@y.example", "a@x.ex(c)ample", "a@x.example:25",
        ])
    func rejectsOutsideGrammar(raw: String) {
        #expect(!EmailAddress.hasMailableShape(raw), "\(raw)")
        #expect(throws: DomainError.self) { try AccountRules.normalizeEmail(raw) }
    }

    @Test(
        "dot-atoms with atext specials, Unicode mailboxes and host names stay accepted",
        arguments: [
            "ana@example.com", "ana.b+tag@mail.example.org", "o'brien@example.ie", "a!#$%&*/=?^_`{|}~-@x.example",
            "ana@xn--bcher-kva.example", "josé@ejemplo.es", "ана@пример.рф", "a@x1.example", "a@1x.example",
        ])
    func acceptsGrammar(raw: String) throws {
        #expect(EmailAddress.hasMailableShape(raw), "\(raw)")
        #expect(try AccountRules.normalizeEmail(raw) == raw)
    }

    @Test("password length is bounded in bytes: 8 … 1024")
    func passwordBounds() throws {
        try AccountRules.validatePassword(String(repeating: "x", count: 8))
        try AccountRules.validatePassword(String(repeating: "x", count: 1024))
        #expect(throws: DomainError.self) { try AccountRules.validatePassword(String(repeating: "x", count: 7)) }
        #expect(throws: DomainError.self) { try AccountRules.validatePassword(String(repeating: "x", count: 1025)) }
        // Multi-byte characters count as their UTF-8 bytes: 2 × "é" (2 bytes each) + 4 = 8 bytes.
        try AccountRules.validatePassword("éé1234")
        #expect(throws: DomainError.self) { try AccountRules.validatePassword("é12345") }
    }

    @Test("display names are trimmed, non-empty, ≤ 100 characters, without control characters")
    func displayName() throws {
        #expect(try AccountRules.normalizeDisplayName("  Ana ") == "Ana")
        #expect(try AccountRules.normalizeDisplayName(String(repeating: "é", count: 100)).count == 100)
        #expect(throws: DomainError.self) { try AccountRules.normalizeDisplayName(String(repeating: "é", count: 101)) }
        #expect(throws: DomainError.self) { try AccountRules.normalizeDisplayName("   ") }
        #expect(throws: DomainError.self) { try AccountRules.normalizeDisplayName("A\u{7}B") }
    }

    @Test("time zones must be known IANA names")
    func timezones() throws {
        #expect(try AccountRules.validateTimezone("America/New_York") == "America/New_York")
        #expect(try AccountRules.validateTimezone("Asia/Kathmandu") == "Asia/Kathmandu")
        #expect(try AccountRules.validateTimezone("UTC") == "UTC")
        #expect(throws: DomainError.self) { try AccountRules.validateTimezone("Mars/Olympus_Mons") }
        #expect(throws: DomainError.self) { try AccountRules.validateTimezone("") }
        #expect(throws: DomainError.self) { try AccountRules.validateTimezone("GMT+5") }
    }
}

@Suite("AttemptWindow — sliding-window attempt limits")
struct AttemptWindowTests {
    let window = AttemptWindow(maxAttempts: 3, windowMilliseconds: 60_000)

    @Test("allows until the limit is reached inside the window")
    func allowsBelowLimit() {
        #expect(window.evaluate(failureTimes: [], now: 100_000) == .allowed)
        #expect(window.evaluate(failureTimes: [90_000, 95_000], now: 100_000) == .allowed)
        #expect(window.evaluate(failureTimes: [30_000, 90_000, 95_000], now: 100_000) == .allowed)  // 30 s is outside
    }

    @Test("refuses at the limit and says when the oldest counted failure leaves the window")
    func refusesAtLimit() {
        #expect(window.evaluate(failureTimes: [95_000, 41_000, 90_000], now: 100_000) == .refused(retryAfterSeconds: 1))
        #expect(window.evaluate(failureTimes: [70_000, 80_000, 90_000], now: 100_000) == .refused(retryAfterSeconds: 30))
        // With more failures than the limit, the wait is until enough expire to go below it.
        #expect(
            window.evaluate(failureTimes: [70_000, 80_000, 90_000, 95_000], now: 100_000)
                == .refused(retryAfterSeconds: 40))
    }

    @Test("the login policy is 10 failures per 15 minutes")
    func loginPolicy() {
        #expect(AttemptWindow.login == AttemptWindow(maxAttempts: 10, windowMilliseconds: 900_000))
    }
}

/// The address policy (`EmailAddress`, docs/mail.md#addresses).
@Suite("Email addresses — NFC, case folding, invisible and confusable characters")
struct EmailAddressTests {
    func refused(_ raw: String) -> Bool {
        do {
            _ = try AccountRules.normalizeEmail(raw)
            return false
        } catch {
            return true
        }
    }

    @Test("trimmed, case-folded and NFC: spellings of one mailbox become one")
    func canonical() throws {
        #expect(try AccountRules.normalizeEmail("  Ana@Example.COM \n") == "ana@example.com")
        // e + combining acute (NFD) and the precomposed é are one address.
        #expect(try AccountRules.normalizeEmail("E\u{301}lise@example.com") == "\u{E9}lise@example.com")
        #expect(try AccountRules.normalizeEmail("\u{C9}LISE@example.com") == "\u{E9}lise@example.com")
        #expect(try AccountRules.normalizeEmail("ИВАН@пример.рф") == "иван@пример.рф", "one script throughout is fine")
    }

    @Test("Cyrillic а inside a Latin address is refused (the red team's confusable)")
    func mixedScript() {
        #expect(refused("puppet-m\u{430}il@example.com"))
        #expect(refused("puppet-mail@ex\u{430}mple.com"), "per domain label too")
        #expect(!refused("puppet-mail@example.com"))
        #expect(!refused("\u{3B1}\u{3BB}\u{3C6}\u{3B1}@example.com"), "an all-Greek local part")
        #expect(!refused("\u{3B1}\u{3BB}\u{3C6}\u{3B1}.1-2@example.com"), "digits and punctuation go with any script")
        #expect(refused("\u{3B1}lpha@example.com"), "Greek alpha + Latin")
        #expect(refused("a\u{3B1}@example.com"), "Latin a + Greek alpha")
    }

    @Test("fullwidth ａ and ligatures are refused: a mail server would not fold them")
    func compatibility() {
        #expect(refused("\u{FF41}na@example.com"))
        #expect(refused("ana@ex\u{FF41}mple.com"))
        #expect(refused("\u{FB01}le@example.com"), "the fi ligature")
    }

    @Test("invisible and bidirectional characters are refused")
    func invisible() {
        for scalar in ["\u{200B}", "\u{200D}", "\u{2060}", "\u{FEFF}", "\u{AD}", "\u{202E}", "\u{2066}", "\u{200F}"] {
            #expect(refused("an\(scalar)a@example.com"), "U+\(String(scalar.unicodeScalars.first!.value, radix: 16))")
        }
    }
}
