import Domain
import Foundation
import Testing

/// `DocumentMembers.of`: a document's top-level members as bytes, checked against Foundation's parse,
/// and `SharedAlarm.editedKeys`, which compares them.
@Suite("Document members — top-level values as bytes, and the keys an edit changed")
struct DocumentMembersTests {
    /// A document with every shape a member can take, strings holding the bytes the scan must skip.
    struct Tricky: Encodable {
        var title = #"a "quoted", {braced} [listed] \ back\slash: "#
        var unicode = "Déjà vu ✓ \u{1F600} \u{0001}"
        var number = -12.5e3
        var flag = true
        var empty = [String: String]()
        var nested = ["b": [#"x","y"#, "}"], "a": ["]"]]
        var list: [[Int]] = [[1, 2], [], [3]]
        var none: String? = nil
    }

    /// Both sides written canonically, so values compare whatever their nesting.
    static func canonical(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    }

    @Test("every member of an encoded document, each value equal to Foundation's parse of it")
    func membersMatchFoundation() throws {
        let document = DocumentCoding.encode(Tricky())
        let members = try #require(DocumentMembers.of(document))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
        #expect(Set(members.keys) == Set(parsed.keys))
        for (key, bytes) in members {
            let value = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            #expect(try Self.canonical(value) == Self.canonical(try #require(parsed[key])), "\(key)")
        }
    }

    @Test("not one whole object: nil", arguments: ["", "{", "[]", #"{"a":1"#, #"{"a":1}x"#, #"{"a"}"#, #"{"a":"x}"#, #"{"a":}"#, "{}x"])
    func malformed(_ text: String) {
        #expect(DocumentMembers.of(Array(text.utf8)) == nil)
    }

    @Test("the empty object has no members")
    func empty() {
        #expect(DocumentMembers.of(Array("{}".utf8))?.isEmpty == true)
    }

    /// `Tricky` with one more member, for `inserting`'s bytes to be checked against the encoder's.
    struct Plus<Extra: Encodable>: Encodable {
        var base = Tricky()
        var key: String
        var extra: Extra
        func encode(to encoder: any Encoder) throws {
            try base.encode(to: encoder)
            var container = encoder.container(keyedBy: AnyKey.self)
            try container.encode(extra, forKey: AnyKey(stringValue: key))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    @Test(
        "inserting puts a member where the encoder sorts it: the same bytes as encoding it all",
        arguments: ["0_first", "flag_", "list_", "nested_zz", "numbers", "zz_last"])
    func insertingMatchesTheEncoder(_ key: String) throws {
        let extra = ["a": [#"x "y", {z}"#], "b": []]
        let inserted = DocumentMembers.inserting(key, DocumentCoding.encode(extra), into: DocumentCoding.encode(Tricky()))
        #expect(inserted == DocumentCoding.encode(Plus(key: key, extra: extra)))
    }

    @Test("inserting into the empty object; a key already there or needing escapes, or no object: nil")
    func insertingEdges() {
        #expect(DocumentMembers.inserting("k", Array("1".utf8), into: Array("{}".utf8)) == Array(#"{"k":1}"#.utf8))
        let document = DocumentCoding.encode(Tricky())
        #expect(DocumentMembers.inserting("title", Array("1".utf8), into: document) == nil)
        #expect(DocumentMembers.inserting(#"a"b"#, Array("1".utf8), into: document) == nil)
        #expect(DocumentMembers.inserting("k", Array("1".utf8), into: Array("[]".utf8)) == nil)
    }

    @Test("editedKeys names the keys a person changed, nested ones too, and none the server keeps")
    func editedKeys() throws {
        let before = try SharedAlarmControlsDomainTests.alarm()
        #expect(before.editedKeys(from: before) == [])
        var after = before
        after.settings.title = #"Filter "HVAC", {monthly}"#
        after.settings.timing.timesOfDay = [try #require(TimeOfDay(hour: 18, minute: 30))]
        after.version += 1
        after.updatedAt = Timestamp(milliseconds: before.updatedAt.milliseconds + 1)
        #expect(after.editedKeys(from: before) == ["times_of_day", "title"])
        #expect(after.editedKeys(from: before, encoded: DocumentCoding.encode(after)) == ["times_of_day", "title"])
    }
}
