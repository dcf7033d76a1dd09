import Domain
import Testing

@Suite("Free text — controls, bidi overrides, invisible characters, NFC")
struct FreeTextTests {
    func violation(_ text: String, _ kind: FreeText.Kind) -> FreeText.Violation? {
        FreeText.firstViolation(in: text, kind)
    }

    @Test("C0 and C1 controls and DEL are refused everywhere; LF and tab only in notes")
    func controls() {
        for scalar: Unicode.Scalar in ["\u{0}", "\u{7}", "\u{1B}", "\r", "\u{7F}", "\u{85}", "\u{9B}"] {
            #expect(violation("a\(scalar)b", .name) == .controlCharacter(scalar))
            #expect(violation("a\(scalar)b", .note) == .controlCharacter(scalar))
        }
        #expect(violation("a\nb", .name) == .controlCharacter("\n"))
        #expect(violation("a\tb", .name) == .controlCharacter("\t"))
        #expect(violation("line 1\nline 2\tcol", .note) == nil)
        #expect(violation("a\u{2028}b", .note) == .lineSeparator("\u{2028}"))
    }

    @Test("bidi embeddings, overrides and isolates are refused in names and notes")
    func bidi() {
        for value: UInt32 in [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069] {
            let scalar = Unicode.Scalar(value)!
            #expect(violation("admin\(scalar)txt.exe", .name) == .bidiControl(scalar))
            #expect(violation("admin\(scalar)txt.exe", .note) == .bidiControl(scalar))
        }
    }

    @Test("zero-width and other format characters are refused in names, allowed in notes")
    func invisible() {
        for value: UInt32 in [0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0xFEFF, 0x00AD, 0xE0041] {
            let scalar = Unicode.Scalar(value)!
            #expect(violation("Ana\(scalar)Lee", .name) == .invisibleCharacter(scalar))
            #expect(violation("Ana\(scalar)Lee", .note) == nil)
        }
        #expect(violation("\u{200B}", .name) == .invisibleCharacter("\u{200B}"))
    }

    @Test("emoji sequences keep their joiners and tags")
    func emoji() {
        #expect(violation("👨‍👩‍👧 Family", .name) == nil)
        #expect(violation("🏳️‍🌈", .name) == nil)
        #expect(violation("🏴󠁧󠁢󠁳󠁣󠁴󠁿 Scotland", .name) == nil)
        // A joiner after an emoji that joins nothing ends the cluster: refused.
        #expect(violation("👨\u{200D}a", .name) == .invisibleCharacter("\u{200D}"))
    }

    @Test("text is NFC-normalised and trimmed; CRLF becomes LF in notes")
    func normalisation() throws {
        let decomposed = "Cafe\u{301}"
        let name = try FreeText.normalize("  \(decomposed) ", .name, field: "name")
        #expect(name == "Café")
        #expect(Array(name.unicodeScalars).map(\.value) == [0x43, 0x61, 0x66, 0xE9])
        #expect(try FreeText.normalize("a\r\nb", .note, field: "note") == "a\nb")
        #expect(throws: DomainError.self) { try FreeText.normalize("a\rb", .note, field: "note") }
    }

    @Test("the error names the field and the character")
    func errors() {
        #expect(throws: DomainError.invalidField(field: "title", message: "title contains a control character (U+001B)")) {
            try FreeText.normalize("\u{1B}[31mred", .name, field: "title")
        }
        #expect(
            throws: DomainError.invalidField(
                field: "display_name", message: "display_name contains a bidirectional override (U+202E)")
        ) { try AccountRules.normalizeDisplayName("Ana\u{202E}gpj.exe") }
        #expect(throws: DomainError.invalidField(field: "name", message: "name contains an invisible character (U+200B)")) {
            try GroupRules.normalizeName("Home\u{200B}")
        }
        #expect(throws: DomainError.self) { try AccountRules.normalizeEmail("ana\u{202E}@example.com") }
    }

    @Test("every free-text field goes through the rules")
    func fields() throws {
        #expect(throws: DomainError.self) { try GroupRules.normalizeDescription("nul\u{0}here") }
        #expect(try GroupRules.normalizeDescription("two\nlines") == "two\nlines")
        #expect(throws: DomainError.self) { try SharedAlarmRules.completionNote("\u{1B}]0;pwned\u{7}") }
        #expect(try SharedAlarmRules.completionNote("Cafe\u{301}") == "Café")
        #expect(try AccountRules.normalizeDisplayName("Zoe\u{308}") == "Zoë")
    }
}
