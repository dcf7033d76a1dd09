import Foundation

/// The one JSON configuration for documents: API responses and change-log rows use the same bytes,
/// so the realtime feed can push a change-log document as it is.
public enum DocumentCoding {
    /// Encodes a document. Key names come from each type's `CodingKeys` (snake_case); keys sorted so
    /// equal documents have equal bytes.
    public static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            // Our document types encode only strings, numbers, booleans and nested documents.
            preconditionFailure("document failed to encode: \(error)")
        }
    }

    /// Decodes a JSON body into `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(bytes))
    }
}
