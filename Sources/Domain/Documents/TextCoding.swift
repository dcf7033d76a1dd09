/// JSON coding of the values the API writes as one string (`Timestamp`, `LocalDate`, the spelling
/// `PersistenceLevel` also accepts): one place decides what a string that does not parse becomes.
enum TextCoding {
    /// Decodes a string and reads it with `parse`; a string `parse` rejects is `dataCorrupted` at the
    /// decoder's coding path, described as "expected `expected`".
    static func decode<Value>(_ decoder: any Decoder, expected: String, _ parse: (String) -> Value?) throws -> Value {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = parse(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected \(expected)"))
        }
        return value
    }

    /// Encodes `text` as one string.
    static func encode(_ text: String, to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
