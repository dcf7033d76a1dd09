/// One header field of an outbound request or its response, name and value as sent or received.
public struct HTTPField: Hashable, Sendable {
    /// The field name (compared case-insensitively by `value(of:)`).
    public var name: String
    /// The field value, without surrounding whitespace.
    public var value: String

    /// A field `name: value`.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Whether the name is an RFC 9110 §5.1 token and the value holds no CR, LF or NUL (so a field
    /// cannot split the request it is written into).
    var isValid: Bool {
        let tokenPunctuation = Set("!#$%&'*+-.^_`|~".utf8)
        let nameValid =
            !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || tokenPunctuation.contains(byte)
            }
        return nameValid && !value.utf8.contains { $0 == 0x0d || $0 == 0x0a || $0 == 0 }
    }
}

extension [HTTPField] {
    /// The value of the first field named `name` (ASCII case-insensitive), or nil.
    public func value(of name: String) -> String? {
        first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
