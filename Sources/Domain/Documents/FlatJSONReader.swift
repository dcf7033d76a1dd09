/// A reader for the flat JSON the notification dispatcher reads back once per delivery it claims: a
/// `NotificationContent` (`{"title":…,"message":…,"args":{…},"data":{…}}`) and a webhook delivery's recipients
/// (`["…",…]`) — strings, objects of strings and arrays of strings, nothing else (RFC 8259 grammar,
/// whitespace and every string escape included).
///
/// Why hand-written: Foundation's `JSONDecoder` builds a container tree per call and was ≈ 6.5 % of
/// the dispatcher's CPU at 10,000 alarms due in one minute (Benchmarks/README.md#notifications-scheduler-lag).
/// Contract: on input outside that grammar — a number, a nested array, a duplicate or missing key,
/// a lone surrogate, invalid UTF-8, trailing bytes — it answers nil and the caller decodes with
/// `DocumentCoding.decode`, so the result never differs from Foundation's, only the cost.
public struct FlatJSONReader {
    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// `["a","b",…]`, or nil.
    public static func stringArray(_ bytes: [UInt8]) -> [String]? {
        var reader = FlatJSONReader(bytes)
        guard let array = reader.stringArray(), reader.atEnd() else { return nil }
        return array
    }

    /// `{"k":"v",…}`, or nil.
    public static func stringObject(_ bytes: [UInt8]) -> [String: String]? {
        var reader = FlatJSONReader(bytes)
        guard let object = reader.stringObject(), reader.atEnd() else { return nil }
        return object
    }

    /// A `NotificationContent`: exactly the keys `title`, `message` (strings), `args` and `data`
    /// (objects of strings), in any order — or, as rows written before messages had keys, `title`,
    /// `body` and `data`; nil for anything else.
    public static func notificationContent(_ bytes: [UInt8]) -> NotificationContent? {
        var reader = FlatJSONReader(bytes)
        var title: String?
        var message: String?
        var args: [String: String]?
        var body: String?
        var data: [String: String]?
        let complete = reader.members { reader, key in
            switch key {
            case "title" where title == nil:
                title = reader.string()
                return title != nil
            case "message" where message == nil:
                message = reader.string()
                return message != nil
            case "args" where args == nil:
                args = reader.stringObject()
                return args != nil
            case "body" where body == nil:
                body = reader.string()
                return body != nil
            case "data" where data == nil:
                data = reader.stringObject()
                return data != nil
            default:
                return false
            }
        }
        guard complete, reader.atEnd(), let title, let data else { return nil }
        switch (message, args, body) {
        case (let key?, let args?, nil):
            return NotificationContent(title: title, message: NotificationMessage(.init(rawValue: key), args), data: data)
        case (nil, nil, let body?):
            return NotificationContent(title: title, body: body, data: data)
        default:
            return nil
        }
    }

    // MARK: - Grammar

    private mutating func stringArray() -> [String]? {
        skipWhitespace()
        guard consume(0x5B) else { return nil }  // [
        var out: [String] = []
        skipWhitespace()
        if consume(0x5D) { return out }  // ]
        while true {
            guard let value = string() else { return nil }
            out.append(value)
            skipWhitespace()
            if consume(0x5D) { return out }
            guard consume(0x2C) else { return nil }  // ,
        }
    }

    private mutating func stringObject() -> [String: String]? {
        var out: [String: String] = [:]
        let complete = members { reader, key in
            guard out[key] == nil, let value = reader.string() else { return false }
            out[key] = value
            return true
        }
        return complete ? out : nil
    }

    /// Reads `{ "key": <value>, … }`, calling `value` with the reader just after each key's colon;
    /// `value` reads the value and answers whether it could. False on any syntax error.
    private mutating func members(_ value: (inout FlatJSONReader, String) -> Bool) -> Bool {
        skipWhitespace()
        guard consume(0x7B) else { return false }  // {
        skipWhitespace()
        if consume(0x7D) { return true }  // }
        while true {
            guard let key = string() else { return false }
            skipWhitespace()
            guard consume(0x3A), value(&self, key) else { return false }  // :
            skipWhitespace()
            if consume(0x7D) { return true }
            guard consume(0x2C) else { return false }
            skipWhitespace()
        }
    }

    /// A string literal after optional whitespace: escapes decoded, the UTF-8 validated.
    private mutating func string() -> String? {
        skipWhitespace()
        guard consume(0x22) else { return nil }
        let start = index
        // Fast path: no escape before the closing quote — the bytes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x22 {
                defer { index += 1 }
                return String(validating: bytes[start..<index], as: UTF8.self)
            }
            if byte == 0x5C { break }
            if byte < 0x20 { return nil }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x22:
                return String(validating: out, as: UTF8.self)
            case 0x5C:
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case 0x22, 0x5C, 0x2F: out.append(escape)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:
                    guard let scalar = unicodeEscape() else { return nil }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            case 0x00..<0x20:
                return nil
            default:
                out.append(byte)
            }
        }
        return nil
    }

    /// The scalar of `\uXXXX` (the `\u` already read), joining a surrogate pair; nil for a lone
    /// surrogate or bad hex.
    private mutating func unicodeEscape() -> Unicode.Scalar? {
        guard let unit = hex4() else { return nil }
        switch unit {
        case 0xD800...0xDBFF:
            guard index + 1 < bytes.count, bytes[index] == 0x5C, bytes[index + 1] == 0x75 else { return nil }
            index += 2
            guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
            return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
        case 0xDC00...0xDFFF:
            return nil
        default:
            return Unicode.Scalar(unit)
        }
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func atEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }
}
