import Hashing

/// One parameter or column value as this module exchanges it with libpq. Columns arrive in text
/// format and are decoded by their type OID: integers (int2/4/8) → `.integer`, float4/8 → `.real`,
/// bool → `.integer(0/1)` (as SQLite stores booleans), bytea → `.bytes`, everything else → `.text`.
public enum PostgresValue: Sendable, Equatable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes (bytea).
    case bytes([UInt8])
}

/// Type OIDs from `pg_type` that decoding distinguishes (src/include/catalog/pg_type.dat).
enum PostgresTypeOID {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let oid: UInt32 = 26
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
}

extension PostgresValue {
    /// Decodes one text-format column value of type `oid` (`bytes` excludes the terminating NUL).
    static func decode(text bytes: UnsafeBufferPointer<UInt8>, oid: UInt32) -> PostgresValue {
        switch oid {
        case PostgresTypeOID.int2, PostgresTypeOID.int4, PostgresTypeOID.int8, PostgresTypeOID.oid:
            if let value = Int64(String(decoding: bytes, as: UTF8.self)) { return .integer(value) }
        case PostgresTypeOID.float4, PostgresTypeOID.float8:
            if let value = Double(String(decoding: bytes, as: UTF8.self)) { return .real(value) }
        case PostgresTypeOID.bool:
            return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case PostgresTypeOID.bytea:
            if let value = decodeHexBytea(bytes) { return .bytes(value) }
        default:
            break
        }
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    /// bytea's text output in hex format (`\x` then two hex digits per byte, the default since 9.0).
    static func decodeHexBytea(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"), text.count % 2 == 0 else {
            return nil
        }
        return Hex.decode(utf8: text.dropFirst(2))
    }
}
