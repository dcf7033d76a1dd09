import Domain
import Foundation
import TestSupport
import Testing

@Suite("FlatJSONReader — the dispatcher's flat JSON read as Foundation's JSONDecoder reads it, or declined")
struct FlatJSONReaderTests {
    /// Foundation's answer for `text` as `T`, nil when it throws.
    static func foundation<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// A string drawn from the characters that matter to a JSON reader: quote, backslash, slash,
    /// every C0 control, DEL, Latin, CJK, U+2028, emoji (a surrogate pair when escaped).
    static func randomText(_ rng: inout SplitMix64) -> String {
        let pool: [Character] = ["a", "Z", " ", "\"", "\\", "/", "\u{7F}", "é", "ß", "水", "\u{2028}", "😀", "👩‍👩‍👧", "\u{FEFF}"]
        var text = ""
        for _ in 0..<Int.random(in: 0...12, using: &rng) {
            if Bool.random(using: &rng) {
                text.append(pool[Int.random(in: 0..<pool.count, using: &rng)])
            } else {
                text.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0...0x1F, using: &rng)))
            }
        }
        return text
    }

    @Test("5,000 random contents written by the server's encoder read back equal to Foundation's")
    func randomContents() throws {
        var rng = SplitMix64(seed: 0x17)
        for _ in 0..<5_000 {
            var data: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &rng) { data[Self.randomText(&rng)] = Self.randomText(&rng) }
            let content = NotificationContent(title: Self.randomText(&rng), body: Self.randomText(&rng), data: data)
            let bytes = DocumentCoding.encode(content)
            let fast = try #require(FlatJSONReader.notificationContent(bytes), "declined \(String(decoding: bytes, as: UTF8.self))")
            #expect(fast == content)
            #expect(fast == (try DocumentCoding.decode(NotificationContent.self, from: bytes)))
            let recipients = Array(data.keys)
            #expect(FlatJSONReader.stringArray(DocumentCoding.encode(recipients)) == recipients)
        }
    }

    @Test("hand-written inputs: whitespace, every escape, surrogate pairs, key order — Foundation's value")
    func handWritten() {
        let texts = [
            #" { "data" : { "type" : "alarm_fired" , "k\u00e9" : "\/\b\f\n\r\t\"\\" } , "#
                + #""body":"x\u0000y", "title" : "\ud83d\ude00 \u6C34" } "#,
            #"{"title":"","body":"","data":{}}"#,
            "{\n\t\"body\":\"é\",\r\n\"title\":\"t\",\"data\":{\"a\":\"b\"}}",
        ]
        for text in texts {
            let fast = FlatJSONReader.notificationContent(Array(text.utf8))
            #expect(fast != nil, "declined \(text)")
            #expect(fast == Self.foundation(NotificationContent.self, text))
        }
        #expect(FlatJSONReader.stringArray(Array(#" [ "a" , "\u00e9" ,"" ] "#.utf8)) == ["a", "é", ""])
        #expect(FlatJSONReader.stringArray(Array("[]".utf8)) == [])
        #expect(FlatJSONReader.stringObject(Array(#"{"a":"1","b":"2"}"#.utf8)) == ["a": "1", "b": "2"])
    }

    @Test("outside the flat grammar it declines (nil), so the caller asks Foundation")
    func declines() {
        let contents = [
            "", " ", "null", "[]", #"{"title":"t","body":"b"}"#,  // data missing
            #"{"title":"t","body":"b","data":{},"extra":"x"}"#,  // a key Foundation would skip
            #"{"title":"t","title":"u","body":"b","data":{}}"#,  // a duplicate key
            #"{"title":1,"body":"b","data":{}}"#, #"{"title":"t","body":"b","data":{"n":2}}"#,
            #"{"title":"t","body":"b","data":{"a":"1","a":"2"}}"#,
            #"{"title":"t","body":"b","data":{}} x"#, #"{"title":"t","body":"b","data":{},}"#,
            #"{"title":"\ud83d","body":"b","data":{}}"#, #"{"title":"\ude00","body":"b","data":{}}"#,
            #"{"title":"\x","body":"b","data":{}}"#, #"{"title":"\u12G4","body":"b","data":{}}"#,
            "{\"title\":\"a\u{01}b\",\"body\":\"b\",\"data\":{}}",  // a raw control byte
            #"{"title":"t","body":"b","data":{}"#, #"{"title":"t"#,
        ]
        for text in contents {
            #expect(FlatJSONReader.notificationContent(Array(text.utf8)) == nil, "read \(text)")
        }
        #expect(FlatJSONReader.notificationContent([0x7B, 0x22, 0xFF, 0x22, 0x3A]) == nil)  // invalid UTF-8
        var invalidUTF8 = Array(#"{"title":""#.utf8) + [0xC3] + Array(#"","body":"b","data":{}}"#.utf8)
        #expect(FlatJSONReader.notificationContent(invalidUTF8) == nil)
        invalidUTF8 = Array(#"["a\n"#.utf8) + [0xE2, 0x82] + Array(#""]"#.utf8)
        #expect(FlatJSONReader.stringArray(invalidUTF8) == nil)
        for text in ["[", "[\"a\",]", "[\"a\" \"b\"]", "[1]", "[[\"a\"]]", "{}", "[\"a\"] ]"] {
            #expect(FlatJSONReader.stringArray(Array(text.utf8)) == nil, "read \(text)")
        }
    }
}
