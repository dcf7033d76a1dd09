/// The top-level members of a document as `DocumentCoding.encode` wrote it, each value as its bytes:
/// what "which keys did this edit change" compares (`SharedAlarm.editedKeys`), and where a member is
/// put into an encoded document instead of encoding it all again (`inserting`).
///
/// Why hand-written: Foundation has no way to reach a member's bytes; parsing both documents into
/// `Any` with `JSONSerialization` and writing every member back out to compare them was a quarter of
/// the server's CPU in a shared alarm's edit (docs/scaling.md#shared-alarm-writes-run-together).
/// Comparing bytes compares values because `encode` writes equal values as equal bytes (keys sorted
/// by their UTF-8 bytes at every depth, no whitespace). Contract: the input is one JSON object;
/// strings may hold any escape; a key is returned as written (document keys are snake_case, never
/// escaped). On anything else — not an object, unterminated, trailing bytes — it answers nil.
public enum DocumentMembers {
    /// The members by key.
    public static func of(_ document: [UInt8]) -> [String: ArraySlice<UInt8>]? {
        guard let members = scan(document) else { return nil }
        var byKey: [String: ArraySlice<UInt8>] = [:]
        for member in members { byKey[member.key] = document[member.value] }
        return byKey
    }

    /// `document` with the member `key`: `value` (its JSON bytes, as `encode` writes them) put in its
    /// sorted place: the bytes `encode` writes for the document with that member added. Nil when
    /// `document` is not one object, already has `key`, or `key` would need escaping.
    public static func inserting(_ key: String, _ value: [UInt8], into document: [UInt8]) -> [UInt8]? {
        let keyBytes = Array(key.utf8)
        guard !keyBytes.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }),
            let members = scan(document), !members.contains(where: { $0.key == key })
        else { return nil }
        let member = [UInt8(ascii: "\"")] + keyBytes + [UInt8(ascii: "\""), UInt8(ascii: ":")] + value
        guard let next = members.first(where: { !Array($0.key.utf8).lexicographicallyPrecedes(keyBytes) }) else {
            // After every member: before the closing brace.
            let end = document.count - 1
            return Array(document[..<end]) + (members.isEmpty ? [] : [UInt8(ascii: ",")]) + member + [UInt8(ascii: "}")]
        }
        return Array(document[..<next.keyStart]) + member + [UInt8(ascii: ",")] + Array(document[next.keyStart...])
    }

    /// The members in document order: each key, where its opening quote is, and its value's bytes.
    private static func scan(_ document: [UInt8]) -> [(key: String, keyStart: Int, value: Range<Int>)]? {
        var members: [(key: String, keyStart: Int, value: Range<Int>)] = []
        let count = document.count
        guard count >= 2, document[0] == UInt8(ascii: "{") else { return nil }
        var index = 1
        if document[index] == UInt8(ascii: "}") { return index + 1 == count ? members : nil }
        while index < count {
            guard document[index] == UInt8(ascii: "\""), let keyEnd = endOfString(document, from: index) else { return nil }
            let key = String(decoding: document[(index + 1)..<(keyEnd - 1)], as: UTF8.self)
            guard keyEnd < count, document[keyEnd] == UInt8(ascii: ":") else { return nil }
            let keyStart = index
            let start = keyEnd + 1
            index = start
            var depth = 0
            scan: while index < count {
                switch document[index] {
                case UInt8(ascii: "\""):
                    guard let end = endOfString(document, from: index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { break scan }
                    depth -= 1
                case UInt8(ascii: ","): if depth == 0 { break scan }
                default: break
                }
                index += 1
            }
            guard index < count, index > start else { return nil }
            members.append((key, keyStart, start..<index))
            if document[index] == UInt8(ascii: "}") { return index + 1 == count ? members : nil }
            index += 1  // the comma
        }
        return nil
    }

    /// The index after the string that opens at `quote`; nil when it does not end.
    private static func endOfString(_ bytes: [UInt8], from quote: Int) -> Int? {
        var index = quote + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }
}
