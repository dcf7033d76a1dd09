import Domain
import Testing

@Suite("DocumentWriter — documents byte for byte as JSONEncoder writes them")
struct DocumentWriterTests {
    static let base = User(
        id: "u_1", email: "a@example.com", displayName: "Ada", timezone: "Europe/Paris", tier: .premium,
        status: .active, version: 7, createdAt: Timestamp(milliseconds: 1_764_000_000_123),
        updatedAt: Timestamp(milliseconds: 1_764_000_500_000), emailVerified: true, locale: "pt-BR",
        avatarURL: "https://example.com/a/b.png?x=1&y=\"2\"", lastSeenAt: Timestamp(milliseconds: 1_764_000_400_999))

    @Test("a user with every field set, and with every optional null")
    func users() {
        var bare = Self.base
        bare.timezone = nil
        bare.locale = nil
        bare.avatarURL = nil
        bare.lastSeenAt = nil
        bare.emailVerified = false
        bare.tier = .free
        bare.status = .suspended
        for user in [Self.base, bare] {
            #expect(user.documentBytes == DocumentCoding.encode(user))
        }
    }

    @Test("every scalar below U+0250, separators, emoji and mixed text in a string field")
    func strings() {
        var texts = (0..<0x250).compactMap(Unicode.Scalar.init).map(String.init)
        texts += ["", "\u{2028}\u{2029}", "😀 👨‍👩‍👧", "a\u{0}b\u{7f}c/d\\e\"f", "\u{feff}x\u{202e}", "tab\tnl\ncr\rff\u{0c}bs\u{08}"]
        for text in texts {
            var user = Self.base
            user.displayName = text
            user.avatarURL = text
            #expect(user.documentBytes == DocumentCoding.encode(user), "\(Array(text.unicodeScalars))")
        }
    }

    @Test("numbers and timestamps at their edges")
    func numbers() {
        for (version, ms) in [(Int64(0), Int64(0)), (-1, -1), (.max, 253_402_300_799_999), (.min, -62_135_596_800_000), (42, 999)] {
            var user = Self.base
            user.version = version
            user.createdAt = Timestamp(milliseconds: ms)
            user.lastSeenAt = Timestamp(milliseconds: ms)
            #expect(user.documentBytes == DocumentCoding.encode(user), "\(version) \(ms)")
        }
    }

    /// A document with the writer's array and object members (the webhook's body shape).
    struct Listed: Encodable {
        var data: [String: String]
        var names: [String]
        var title: String
    }

    @Test("arrays of strings and string objects, keys sorted, escapes and empties")
    func arraysAndObjects() {
        let texts = ["", "a\u{0}b\u{7f}c/d\\e\"f", "😀 👨‍👩‍👧", "tab\tnl\n"]
        let dictionaries: [[String: String]] = [
            [:], ["alarm_id": "a_1", "group_id": "g_2", "occurrence": "2026-11-26T07:00:00.000Z", "type": "alarm_fired"],
            ["b": texts[1], "a_1": texts[2], "a": "", "a1": "x", "Z": "y", "_": "z", "é": "w"],
        ]
        for data in dictionaries {
            for names in [[], texts, ["u_1"]] {
                let listed = Listed(data: data, names: names, title: texts[1])
                var writer = DocumentWriter()
                writer.member("data", listed.data)
                writer.member("names", listed.names)
                writer.member("title", listed.title)
                #expect(writer.finish() == DocumentCoding.encode(listed), "\(data) \(names)")
            }
        }
    }
}
