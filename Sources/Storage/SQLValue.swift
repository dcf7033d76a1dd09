/// One column or parameter value, as both backends exchange it: SQLite's five storage classes
/// (https://sqlite.org/datatype3.html §2); the PostgreSQL backend maps BIGINT ↔ `.integer`,
/// DOUBLE PRECISION ↔ `.real`, TEXT ↔ `.text`, BYTEA ↔ `.blob` (docs/architecture.md, Storage).
public enum SQLValue: Sendable, Equatable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes (an empty blob is distinct from NULL).
    case blob([UInt8])

    /// `.integer(value)`, or `.null` for nil.
    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    /// `.integer(Int64(value))`, or `.null` for nil.
    public init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    /// `.real(value)`, or `.null` for nil.
    public init(_ value: Double?) { self = value.map { .real($0) } ?? .null }
    /// `.text(value)`, or `.null` for nil.
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    /// `.blob(value)`, or `.null` for nil.
    public init(_ value: [UInt8]?) { self = value.map { .blob($0) } ?? .null }
    /// `.integer(1)` for true, `.integer(0)` for false (neither schema uses a boolean type).
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }

    /// True for `.null`.
    public var isNull: Bool { self == .null }
}

extension SQLValue: ExpressibleByIntegerLiteral {
    /// An integer literal becomes `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLValue: ExpressibleByFloatLiteral {
    /// A floating-point literal becomes `.real`.
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLValue: ExpressibleByStringLiteral {
    /// A string literal becomes `.text`.
    public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLValue: ExpressibleByNilLiteral {
    /// `nil` becomes `.null`.
    public init(nilLiteral: ()) { self = .null }
}

extension SQLValue: CustomStringConvertible {
    /// A debugging rendering (blobs as their length, not their bytes).
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value)'"
        case .blob(let value): "<blob \(value.count) bytes>"
        }
    }
}

/// SQL text the stores share.
public enum SQLText {
    /// `?first, ?first+1, …`: `count` numbered parameters, the list of an `IN (…)` whose values are bound
    /// from position `first`.
    public static func parameters(count: Int, from first: Int) -> String {
        (first..<first + count).map { "?\($0)" }.joined(separator: ", ")
    }
}
