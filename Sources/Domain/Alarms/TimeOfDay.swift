/// A wall-clock time in the alarm's zone, encoded in JSON as `{"hour": 9, "minute": 0}`
/// (`times_of_day`, docs/design.md#shared-alarms). Decoding rejects hours outside 0–23 and minutes outside 0–59.
public struct TimeOfDay: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Hour, 0…23.
    public let hour: Int
    /// Minute, 0…59.
    public let minute: Int

    /// The time, or nil when `hour` is outside 0…23 or `minute` outside 0…59.
    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// Parses the legacy `"HH:mm"` form (`time_of_day`, docs/design.md#shared-alarms); nil for anything else.
    public init?(parsing text: String) {
        let b = Array(text.utf8)
        guard b.count == 5, b[2] == 58, b.indices.allSatisfy({ $0 == 2 || (b[$0] >= 48 && b[$0] <= 57) })
        else { return nil }
        self.init(hour: Int(b[0] - 48) * 10 + Int(b[1] - 48), minute: Int(b[3] - 48) * 10 + Int(b[4] - 48))
    }

    /// Seconds after local midnight.
    public var secondsOfDay: Int { hour * 3600 + minute * 60 }

    public static func < (a: TimeOfDay, b: TimeOfDay) -> Bool { (a.hour, a.minute) < (b.hour, b.minute) }

    /// `HH:mm`.
    public var description: String {
        (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }

    enum CodingKeys: String, CodingKey {
        case hour, minute
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let hour = try c.decode(Int.self, forKey: .hour)
        let minute = try c.decode(Int.self, forKey: .minute)
        guard (0...23).contains(hour) else {
            throw DecodingError.dataCorruptedError(forKey: .hour, in: c, debugDescription: "hour must be 0–23")
        }
        guard (0...59).contains(minute) else {
            throw DecodingError.dataCorruptedError(forKey: .minute, in: c, debugDescription: "minute must be 0–59")
        }
        self.hour = hour
        self.minute = minute
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hour, forKey: .hour)
        try c.encode(minute, forKey: .minute)
    }
}
