import Domain
import Foundation
import Testing

@Suite("JSONString — the one escaper of hand-written JSON")
struct JSONStringTests {
    @Test("short escapes, \\u00XX for other controls and DEL, UTF-8 untouched")
    func escapes() {
        #expect(JSONString.quote("a\"b\\c\nd\re\tf") == #""a\"b\\c\nd\re\tf""#)
        #expect(JSONString.quote("\u{0}\u{1f}\u{7f}") == #""\u0000\u001f\u007f""#)
        #expect(JSONString.quote("\u{8}\u{c}") == #""\b\f""#)
        var document: [UInt8] = []
        JSONString.append("\u{7f}".utf8, to: &document, escapingDelete: false)
        #expect(document == [0x22, 0x7F, 0x22], "DEL as is, as JSONEncoder writes it")
        #expect(JSONString.quote("Zoë 👨‍👩‍👧 \u{202e}") == "\"Zoë 👨‍👩‍👧 \u{202e}\"")
    }

    @Test("every string of the first 0x250 scalars round-trips through a JSON parser")
    func roundTrip() throws {
        var scalars = (0..<0x250).compactMap(Unicode.Scalar.init).map(String.init)
        scalars += ["", "\u{2028}\u{2029}", "😀", "a\u{0}b"]
        for text in scalars {
            let json = "[" + JSONString.quote(text) + "]"
            let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
            #expect(parsed == [text], "\(json)")
        }
    }
}
