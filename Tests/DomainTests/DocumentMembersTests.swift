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
    }
}
