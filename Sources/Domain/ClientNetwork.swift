/// The network a client address stands for when counting failed attempts per IP (invite codes,
/// logins). An IPv4 address is one network; an IPv6 address counts as its /64, because a single
/// subscriber routinely holds a whole /64 (2^64 addresses) and would otherwise get a fresh budget per
/// address. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is its IPv4 address.
public enum ClientNetwork {
    /// `"203.0.113.7"` → `"203.0.113.7"`; `"2001:db8:1:2:aa::1"` → `"2001:db8:1:2::/64"`;
    /// `"::ffff:203.0.113.7"` → `"203.0.113.7"`. Text that is not an IPv6 address is returned as is.
    public static func rateLimitKey(_ address: String) -> String {
        guard address.contains(":"), let groups = ipv6Groups(address) else { return address }
        if groups[0..<5].allSatisfy({ $0 == 0 }) && groups[5] == 0xFFFF {
            return "\(groups[6] >> 8).\(groups[6] & 0xFF).\(groups[7] >> 8).\(groups[7] & 0xFF)"
        }
        return groups[0..<4].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    /// The eight 16-bit groups of an IPv6 address in text form (RFC 4291 §2.2: `::`, a trailing
    /// dotted IPv4 part, an optional `%zone`), or nil when it is not one.
    static func ipv6Groups(_ text: String) -> [UInt16]? {
        var text = Substring(text)
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
        let gaps = text.ranges(of: "::")
        guard gaps.count <= 1 else { return nil }
        let halves = gaps.first.map { [String(text[..<$0.lowerBound]), String(text[$0.upperBound...])] } ?? [String(text)]
        func parse(_ part: String, allowIPv4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var groups: [UInt16] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, field) in fields.enumerated() {
                if allowIPv4Tail && i == fields.count - 1 && field.contains(".") {
                    let octets = field.split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
                    guard octets.count == 4, octets.allSatisfy({ $0 != nil }) else { return nil }
                    let o = octets.map { UInt16($0!) }
                    groups += [o[0] << 8 | o[1], o[2] << 8 | o[3]]
                } else {
                    guard (1...4).contains(field.count), let value = UInt16(field, radix: 16) else { return nil }
                    groups.append(value)
                }
            }
            return groups
        }
        if halves.count == 1 {
            guard let groups = parse(halves[0], allowIPv4Tail: true), groups.count == 8 else { return nil }
            return groups
        }
        guard let head = parse(halves[0], allowIPv4Tail: false), let tail = parse(halves[1], allowIPv4Tail: true),
            head.count + tail.count <= 7
        else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }
}
