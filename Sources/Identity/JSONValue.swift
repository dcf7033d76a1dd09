import Foundation

/// A JSON value as decoded, keeping booleans apart from numbers (Foundation's `JSONSerialization`
/// hands both out as `NSNumber`): what the JOSE header, the claims and a JWK are read through.
enum JSONValue: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let value = try? c.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? c.decode(Double.self) {
            self = .number(value)
        } else if let value = try? c.decode(String.self) {
            self = .string(value)
        } else if let value = try? c.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    /// The JSON object in `bytes`, or nil for anything else.
    static func object(_ bytes: [UInt8]) -> [String: JSONValue]? {
        try? JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}
