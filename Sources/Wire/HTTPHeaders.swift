/// An ordered list of header fields (RFC 9110 §5). Names compare case-insensitively (ASCII);
/// repeated fields are kept in arrival order.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)
    @usableFromInline var fields: [Element]

    public init() { fields = [] }
    public init(_ fields: [Element]) { self.fields = fields }
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Element]> { fields.makeIterator() }

    /// Appends a field, keeping any existing field of the same name.
    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    /// Replaces every field named `name` with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        fields.append((name, value))
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
    }

    /// The first value of the field `name`, if present.
    public subscript(first name: String) -> String? {
        for field in fields where Self.namesEqual(field.name, name) { return field.value }
        return nil
    }

    /// Every value of the field `name`, in arrival order.
    public subscript(all name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    /// Whether a field `name` is present.
    public func contains(name: String) -> Bool { self[first: name] != nil }

    /// Whether any comma-separated element of any `name` field equals `token` (ASCII case-insensitive),
    /// e.g. `containsToken("connection", "close")`.
    public func containsToken(name: String, _ token: String) -> Bool {
        for value in self[all: name] {
            for element in value.split(separator: ",") {
                if Self.namesEqual(String(element.trimmingASCIIWhitespace()), token) { return true }
            }
        }
        return false
    }

    /// ASCII case-insensitive comparison (header names and tokens are ASCII by grammar).
    @inlinable
    public static func namesEqual(_ a: String, _ b: String) -> Bool {
        var ai = a.utf8.makeIterator()
        var bi = b.utf8.makeIterator()
        while true {
            switch (ai.next(), bi.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x == y { continue }
                let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
                let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
                if lx != ly { return false }
            default: return false
            }
        }
    }
}

extension Substring {
    /// The substring without leading and trailing spaces and horizontal tabs (RFC 9110 OWS).
    public func trimmingASCIIWhitespace() -> Substring {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
