public import Wire

/// Routes by method and path template. Templates are `/`-separated literal segments and `{name}`
/// parameters (`/v1/groups/{id}/members/{user_id}`). Static paths resolve through one dictionary
/// lookup; parameterised ones by segment comparison. HEAD falls back to the GET route.
public struct Router<Handler: Sendable>: Sendable {
    /// A route that matched.
    public struct Match: Sendable {
        public var handler: Handler
        /// The template that matched (for logs and metrics: bounded cardinality).
        public var template: String
        /// The template's number, 0 ..< the number of templates, in registration order (metrics
        /// find a route's series by it without hashing the template).
        public var routeIndex: Int
        /// Percent-decoded path parameters.
        public var parameters: [String: String]
    }

    /// The outcome of `match`.
    public enum Outcome: Sendable {
        case matched(Match)
        /// The path exists but not for this method; `allowed` is the `Allow` list.
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
        /// The path had an invalid percent-encoding.
        case badPath
    }

    private struct Entry: Sendable {
        var template: String
        var index: Int
        var segments: [Segment]
        /// A handful per template: searched in order, cheaper than hashing the method.
        var handlers: [(method: HTTPMethod, handler: Handler)]

        func handler(for method: HTTPMethod) -> Handler? {
            for entry in handlers where entry.method == method { return entry.handler }
            return nil
        }
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var staticRoutes: [String: Entry] = [:]
    private var parameterRoutes: [Entry] = []
    private var templateCount = 0

    public init() {}

    /// Registers `handler` for `method` on `template`. Registering the same pair twice is a bug.
    public mutating func add(_ method: HTTPMethod, _ template: String, _ handler: Handler) {
        let segments = template.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        let isStatic = !segments.contains { if case .parameter = $0 { true } else { false } }
        if isStatic {
            var entry = staticRoutes[template] ?? newEntry(template, segments)
            precondition(entry.handler(for: method) == nil, "duplicate route \(method) \(template)")
            entry.handlers.append((method, handler))
            staticRoutes[template] = entry
        } else if let i = parameterRoutes.firstIndex(where: { $0.segments == segments }) {
            precondition(parameterRoutes[i].handler(for: method) == nil, "duplicate route \(method) \(template)")
            parameterRoutes[i].handlers.append((method, handler))
        } else {
            var entry = newEntry(template, segments)
            entry.handlers.append((method, handler))
            parameterRoutes.append(entry)
        }
    }

    private mutating func newEntry(_ template: String, _ segments: [Segment]) -> Entry {
        defer { templateCount += 1 }
        return Entry(template: template, index: templateCount, segments: segments, handlers: [])
    }

    /// Every registered (method, template) pair, sorted (for the API description check).
    public var routes: [(method: HTTPMethod, template: String)] {
        (Array(staticRoutes.values) + parameterRoutes)
            .flatMap { entry in entry.handlers.map { (method: $0.method, template: entry.template) } }
            .sorted { ($0.template, $0.method.rawValue) < ($1.template, $1.method.rawValue) }
    }

    /// Finds the route for a request path (without query; still percent-encoded).
    public func match(_ method: HTTPMethod, path: Substring) -> Outcome {
        if let entry = staticRoutes[String(path)] {
            return select(entry, method: method, parameters: [:])
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        for entry in parameterRoutes where entry.segments.count == parts.count {
            var parameters: [String: String] = [:]
            var matched = true
            for (segment, part) in zip(entry.segments, parts) {
                switch segment {
                case .literal(let literal):
                    if literal != part { matched = false }
                case .parameter(let name):
                    guard let decoded = PercentDecoding.decode(part) else { return .badPath }
                    parameters[name] = decoded
                }
                if !matched { break }
            }
            if matched { return select(entry, method: method, parameters: parameters) }
        }
        return .notFound
    }

    private func select(_ entry: Entry, method: HTTPMethod, parameters: [String: String]) -> Outcome {
        if let handler = entry.handler(for: method) ?? (method == .head ? entry.handler(for: .get) : nil) {
            return .matched(Match(handler: handler, template: entry.template, routeIndex: entry.index, parameters: parameters))
        }
        var allowed = entry.handlers.map(\.method)
        if entry.handler(for: .get) != nil, entry.handler(for: .head) == nil { allowed.append(.head) }
        return .methodNotAllowed(allowed: allowed.sorted { $0.rawValue < $1.rawValue })
    }
}

/// RFC 3986 §2.1 percent-decoding of one path segment.
enum PercentDecoding {
    /// The decoded text, or nil for a malformed escape or invalid UTF-8.
    static func decode(_ segment: Substring) -> String? {
        guard segment.utf8.contains(UInt8(ascii: "%")) else { return String(segment) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var it = segment.utf8.makeIterator()
        while let b = it.next() {
            if b == UInt8(ascii: "%") {
                guard let h = it.next().flatMap(hexValue), let l = it.next().flatMap(hexValue) else { return nil }
                bytes.append(h << 4 | l)
            } else {
                bytes.append(b)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
