/// An optional document field that is always written: `null` when absent, never left out (the API's and
/// the change log's documents: every field always exists). A synthesized `Encodable` leaves a nil
/// optional out; this wrapper makes it write the key, so a document needs no hand-written
/// `encode(to:)` to keep its nulls.
///
/// Decoding accepts the key with `null`, with a value, or missing (nil), like a plain optional.
@propertyWrapper
public struct ExplicitNull<Value: Codable>: Codable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension ExplicitNull: Sendable where Value: Sendable {}
extension ExplicitNull: Equatable where Value: Equatable {}

extension KeyedDecodingContainer {
    /// A missing key decodes as nil (the synthesized `Decodable` asks for a non-optional wrapper).
    public func decode<Value>(_ type: ExplicitNull<Value>.Type, forKey key: Key) throws -> ExplicitNull<Value> {
        try decodeIfPresent(type, forKey: key) ?? ExplicitNull(wrappedValue: nil)
    }
}
