import Hashing
import Storage

/// Type OIDs from `pg_type` that decoding distinguishes (src/include/catalog/pg_type.dat).
enum PostgresTypeOID {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let numeric: UInt32 = 1700
}

/// Columns arrive in text format and are decoded by their type OID into the values SQLite would
/// have produced for the same query: integers (int2/4/8, oid) → `.integer`; float4/8 → `.real`;
/// numeric (what `sum(bigint)` returns) → `.integer` when integral, else `.real`; bool → `.integer(0/1)`
/// (as SQLite answers comparisons); bytea → `.blob`; everything else → `.text`.
enum PostgresDecoding {
    /// Decodes one text-format column value of type `oid` (`bytes` excludes the terminating NUL).
    static func decode(text bytes: UnsafeBufferPointer<UInt8>, oid: UInt32) -> SQLValue {
        switch oid {
        case PostgresTypeOID.int2, PostgresTypeOID.int4, PostgresTypeOID.int8, PostgresTypeOID.oid:
            if let value = Int64(String(decoding: bytes, as: UTF8.self)) { return .integer(value) }
        case PostgresTypeOID.float4, PostgresTypeOID.float8:
            if let value = Double(String(decoding: bytes, as: UTF8.self)) { return .real(value) }
        case PostgresTypeOID.numeric:
            let text = String(decoding: bytes, as: UTF8.self)
            if let value = Int64(text) { return .integer(value) }
            if let value = Double(text) { return .real(value) }
        case PostgresTypeOID.bool:
            return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case PostgresTypeOID.bytea:
            if let value = decodeHexBytea(bytes) { return .blob(value) }
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
