import Domain
import Testing

@Suite("ExplicitNull — optional document fields are written as null, read back absent or null")
struct ExplicitNullTests {
    let user = User(
        id: "u", email: "u@example.com", displayName: "U", timezone: nil, tier: .free, status: .active, version: 1,
        createdAt: Timestamp(milliseconds: 0), updatedAt: Timestamp(milliseconds: 1))

    @Test("a nil field is written as null; a value as the value")
    func encodes() {
        #expect(
            String(decoding: DocumentCoding.encode(user), as: UTF8.self)
                == #"{"anonymous":false,"avatar_url":null,"created_at":"1970-01-01T00:00:00.000Z","display_name":"U","#
                + #""email":"u@example.com","email_verified":false,"id":"u","last_seen_at":null,"locale":null,"migrated_at":null,"#
                + #""status":"active","tier":"free","timezone":null,"updated_at":"1970-01-01T00:00:00.001Z","version":1}"#)
        var anonymous = user
        anonymous.anonymous = true
        let anonymousText = String(decoding: DocumentCoding.encode(anonymous), as: UTF8.self)
        #expect(anonymousText.contains(#""anonymous":true,"#) && anonymousText.contains(#""email":null,"#))
        #expect(anonymous.documentBytes == DocumentCoding.encode(anonymous), "the fast writer writes the same bytes")
        var zoned = user
        zoned.timezone = "Europe/Berlin"
        #expect(String(decoding: DocumentCoding.encode(zoned), as: UTF8.self).contains(#""timezone":"Europe/Berlin""#))
    }

    @Test("decoding takes null, a missing key and a value; a wrong type still fails")
    func decodes() throws {
        let written = DocumentCoding.encode(user)
        #expect(try DocumentCoding.decode(User.self, from: written) == user)
        let missing = Array(
            String(decoding: written, as: UTF8.self).replacing(#""timezone":null,"#, with: "").utf8)
        #expect(try DocumentCoding.decode(User.self, from: missing) == user)
        let zoned = Array(
            String(decoding: written, as: UTF8.self).replacing(#""timezone":null"#, with: #""timezone":"UTC""#).utf8)
        #expect(try DocumentCoding.decode(User.self, from: zoned).timezone == "UTC")
        let wrong = Array(
            String(decoding: written, as: UTF8.self).replacing(#""timezone":null"#, with: #""timezone":3"#).utf8)
        #expect(throws: DecodingError.self) { try DocumentCoding.decode(User.self, from: wrong) }
    }
}
