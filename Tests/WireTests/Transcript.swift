import TestSupport
import Testing
import Wire

/// What a parser produced, in a comparable form: `HTTPParserEvent` itself is not `Equatable`.
enum Event: Equatable, CustomStringConvertible {
    case head(Head)
    case request(Head, body: [UInt8])
    /// A streamed body's bytes (`.bodyChunk`), and its end (`.bodyEnd`).
    case chunk([UInt8])
    case end
    case error(code: Int, reason: String)

    struct Head: Equatable, CustomStringConvertible {
        var method: String
        var target: String
        var version: String
        var headers: [String]
        var keepAlive = true
        var expectsContinue = false

        var description: String {
            "\(method) \(target) \(version) \(headers) keepAlive=\(keepAlive) continue=\(expectsContinue)"
        }
    }

    init(_ event: HTTPParserEvent) {
        switch event {
        case .head(let head): self = .head(Head(head))
        case .request(let request): self = .request(Head(request.head), body: request.body)
        case .bodyChunk(let bytes): self = .chunk(bytes)
        case .bodyEnd: self = .end
        }
    }

    var description: String {
        switch self {
        case .head(let head): ".head(\(head))"
        case .request(let head, let body): ".request(\(head), body: \(String(decoding: body, as: UTF8.self).debugDescription))"
        case .chunk(let bytes): ".chunk(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .end: ".end"
        case .error(let code, let reason): ".error(\(code), \(reason))"
        }
    }

    /// A request and its head event, as the parser emits them.
    static func exchange(_ head: Head, body: String = "") -> [Event] {
        [.head(head), .request(head, body: Array(body.utf8))]
    }

    static func error(_ code: Int) -> Event { .error(code: code, reason: "") }
}

extension Event.Head {
    init(_ head: HTTPRequestHead) {
        self.init(
            method: head.method.rawValue, target: head.target, version: head.version.description,
            headers: head.headers.map { "\($0.name): \($0.value)" }, keepAlive: head.keepAlive,
            expectsContinue: head.expectsContinue)
    }

    /// A GET-style head: `GET <target> HTTP/1.1` with the given header lines.
    static func get(
        _ target: String = "/", version: String = "HTTP/1.1", _ headers: [String] = ["Host: a"], keepAlive: Bool = true
    ) -> Self {
        Self(method: "GET", target: target, version: version, headers: headers, keepAlive: keepAlive)
    }
}

/// The bytes of an ASCII test vector (`\r\n` spelled out in the literal).
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Drains every available event; an error ends the transcript (with the reason dropped, so that
/// transcripts compare by status; `reasons` keeps it).
func drain(_ parser: inout HTTPRequestParser, reasons: Bool = false) -> [Event] {
    var events: [Event] = []
    do {
        while let event = try parser.next() { events.append(Event(event)) }
    } catch {
        events.append(.error(code: error.status.code, reason: reasons ? error.reason : ""))
    }
    return events
}

/// The transcript of `input` fed in one piece.
func parse(_ input: [UInt8], limits: HTTPLimits = HTTPLimits()) -> [Event] {
    var parser = HTTPRequestParser(limits: limits)
    parser.append(input)
    return drain(&parser)
}

/// A parser plus whether it already threw (a dead parser rethrows; the transcript keeps one error).
struct FedParser {
    var parser: HTTPRequestParser
    var failed = false

    init(limits: HTTPLimits) { parser = HTTPRequestParser(limits: limits) }

    mutating func feed(_ chunk: [UInt8]) -> [Event] {
        guard !failed else { return [] }
        parser.append(chunk)
        let events = drain(&parser)
        if case .error = events.last { failed = true }
        return events
    }
}

/// Expects `input` to produce `expected` fed whole, at every split point and one byte at a time.
func expectAtEverySplit(
    _ input: [UInt8], _ expected: [Event], limits: HTTPLimits = HTTPLimits(),
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let mismatch = ChunkFeeder.firstMismatch(
        input, expected: expected, make: { FedParser(limits: limits) }, feed: { $0.feed($1) })
    if let mismatch {
        Issue.record(
            "\(mismatch.split): got \(mismatch.outputs), expected \(expected)", sourceLocation: sourceLocation)
    }
}

/// Expects `input` to produce `expected` fed whole and one byte at a time (for inputs too large
/// to replay at every split point).
func expectWholeAndBytewise(
    _ input: [UInt8], _ expected: [Event], limits: HTTPLimits = HTTPLimits(),
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(parse(input, limits: limits) == expected, "whole input", sourceLocation: sourceLocation)
    var fed = FedParser(limits: limits)
    var events: [Event] = []
    for byte in input { events += fed.feed([byte]) }
    #expect(events == expected, "one byte at a time", sourceLocation: sourceLocation)
}
