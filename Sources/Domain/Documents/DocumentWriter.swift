/// Writes one flat JSON object byte for byte as `DocumentCoding.encode` (Foundation's `JSONEncoder`
/// with `.sortedKeys, .withoutEscapingSlashes`) writes it, without the `Encoder` machinery: for the
/// documents written on every request (`User.documentBytes`, inside the writer's transaction).
///
/// The caller adds the members in sorted key order (byte order of the ASCII keys); each key is
/// written as given. Strings are escaped by `JSONString` as `JSONEncoder` escapes them (DEL, `/` and
/// non-ASCII as is).
/// `DocumentWriterTests` pins the equality against `JSONEncoder`.
public struct DocumentWriter {
    /// The bytes so far (complete after `finish()`).
    public private(set) var bytes: [UInt8] = []
    private var empty = true

    /// An object about to receive its first member; `capacity` bytes are reserved.
    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
        bytes.append(0x7B)  // {
    }

    /// A string member.
    public mutating func member(_ key: StaticString, _ value: String) {
        begin(key)
        JSONString.append(value.utf8, to: &bytes, escapingDelete: false)
    }

    /// A string member, or `null`.
    public mutating func member(_ key: StaticString, _ value: String?) {
        guard let value else { return nullMember(key) }
        member(key, value)
    }

    /// An integer member.
    public mutating func member(_ key: StaticString, _ value: Int64) {
        begin(key)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A boolean member.
    public mutating func member(_ key: StaticString, _ value: Bool) {
        begin(key)
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    /// A timestamp member: its RFC 3339 text, as `Timestamp.encode(to:)` writes it.
    public mutating func member(_ key: StaticString, _ value: Timestamp) {
        begin(key)
        bytes.append(0x22)
        Timestamp.append(value.milliseconds, to: &bytes)
        bytes.append(0x22)
    }

    /// A timestamp member, or `null`.
    public mutating func member(_ key: StaticString, _ value: Timestamp?) {
        guard let value else { return nullMember(key) }
        member(key, value)
    }

    /// An array-of-strings member.
    public mutating func member(_ key: StaticString, _ value: [String]) {
        begin(key)
        bytes.append(0x5B)  // [
        for (index, element) in value.enumerated() {
            if index > 0 { bytes.append(0x2C) }
            JSONString.append(element.utf8, to: &bytes, escapingDelete: false)
        }
        bytes.append(0x5D)  // ]
    }

    /// A string-to-string object member, its keys in sorted order as `.sortedKeys` writes them.
    public mutating func member(_ key: StaticString, _ value: [String: String]) {
        begin(key)
        bytes.append(0x7B)  // {
        for (index, entry) in value.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { bytes.append(0x2C) }
            JSONString.append(entry.key.utf8, to: &bytes, escapingDelete: false)
            bytes.append(0x3A)
            JSONString.append(entry.value.utf8, to: &bytes, escapingDelete: false)
        }
        bytes.append(0x7D)  // }
    }

    /// A `null` member.
    public mutating func nullMember(_ key: StaticString) {
        begin(key)
        bytes.append(contentsOf: "null".utf8)
    }

    /// The finished object.
    public mutating func finish() -> [UInt8] {
        bytes.append(0x7D)  // }
        return bytes
    }

    private mutating func begin(_ key: StaticString) {
        if !empty { bytes.append(0x2C) }  // ,
        empty = false
        bytes.append(0x22)
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(contentsOf: [0x22, 0x3A])  // ":
    }
}

extension User {
    /// `DocumentCoding.encode(self)`, byte for byte, at a fraction of the cost: the document every
    /// profile write stores in the change log and answers with.
    public var documentBytes: [UInt8] {
        // Members in sorted key order (the `CodingKeys` raw values).
        var writer = DocumentWriter(capacity: 320)
        writer.member("avatar_url", avatarURL)
        writer.member("created_at", createdAt)
        writer.member("display_name", displayName)
        writer.member("email", email)
        writer.member("email_verified", emailVerified)
        writer.member("id", id)
        writer.member("last_seen_at", lastSeenAt)
        writer.member("locale", locale)
        writer.member("status", status.rawValue)
        writer.member("tier", tier.rawValue)
        writer.member("timezone", timezone)
        writer.member("updated_at", updatedAt)
        writer.member("version", version)
        return writer.finish()
    }
}
