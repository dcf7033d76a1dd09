import Foundation

/// A client's request id (`"id"` in any client message), echoed in the `error` it causes.
public enum RequestID: Hashable, Sendable {
    case string(String)
    case number(Int64)
}

/// One decoded client message (JSON text):
///
///     {"op":"subscribe","topic":"group:<uuid>"|"user","since"?:<seq ≥ 0>,"epoch"?:"…","id"?:…}
///     {"op":"unsubscribe","topic":…,"id"?:…}
///     {"op":"auth","token":"<bearer token>","id"?:…}
///     {"op":"ping","id"?:…}
///
/// `epoch` is the one the client's last snapshot named: a different server epoch (restored or
/// replaced database) turns the resume into a reset snapshot. Topics stay as the client wrote them (`user` or `group:<id>`); the hub
/// resolves them once the
/// connection's user is known.
public enum ClientMessage: Equatable, Sendable {
    case subscribe(topic: String, since: Int64?, epoch: String?, id: RequestID?)
    case unsubscribe(topic: String, id: RequestID?)
    case auth(token: String, id: RequestID?)
    case ping(id: RequestID?)

    /// The request id the client attached, if any.
    public var requestID: RequestID? {
        switch self {
        case .subscribe(_, _, _, let id), .unsubscribe(_, let id), .auth(_, let id), .ping(let id): id
        }
    }
}

/// Why a client message was refused. `tooLarge` closes the socket (1009); the others are answered
/// with an `error` message and counted towards `RealtimeLimits.maxProtocolErrors`.
public enum ClientMessageError: Error, Equatable, Sendable {
    /// Longer than `RealtimeLimits.maxInboundMessageBytes` (checked before parsing).
    case tooLarge(Int)
    /// Not a JSON object, or a field of the wrong type (`since` negative or not an integer, …).
    case malformed(String)
    /// `op` missing or not one of subscribe, unsubscribe, auth, ping.
    case unknownOp(String)
    /// A required field is missing (`topic`, `token`).
    case missingField(String)

    /// The `error.code` sent to the client.
    public var code: RealtimeErrorCode {
        switch self {
        case .tooLarge: .messageTooLarge
        case .malformed, .missingField: .invalidMessage
        case .unknownOp: .unknownOp
        }
    }

    /// The `error.message` sent to the client (never internal detail).
    public var message: String {
        switch self {
        case .tooLarge(let n): "message of \(n) bytes is over the limit"
        case .malformed(let why): "malformed message: \(why)"
        case .unknownOp(let op): "unknown op '\(op)'"
        case .missingField(let field): "missing field '\(field)'"
        }
    }
}

/// Decodes client messages under `RealtimeLimits`. Pure: bytes in, a message or an error out.
public struct ClientMessageDecoder: Sendable {
    /// The limits applied (only `maxInboundMessageBytes` is used here).
    public var limits: RealtimeLimits

    public init(limits: RealtimeLimits = RealtimeLimits()) { self.limits = limits }

    private struct Fields: Decodable {
        var op: String?
        var topic: String?
        var since: Int64?
        var token: String?
        var epoch: String?
        var id: RequestID?
    }

    /// Decodes one complete text message (the WebSocket layer has already reassembled and UTF-8
    /// validated it).
    public func decode(_ text: [UInt8]) throws(ClientMessageError) -> ClientMessage {
        guard text.count <= limits.maxInboundMessageBytes else { throw .tooLarge(text.count) }
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Fields.self, from: Data(text))
        } catch {
            throw .malformed(Self.describe(error))
        }
        guard let op = fields.op else { throw .missingField("op") }
        if let since = fields.since, since < 0 { throw .malformed("'since' must be ≥ 0") }
        switch op {
        case "subscribe":
            guard let topic = fields.topic else { throw .missingField("topic") }
            return .subscribe(topic: topic, since: fields.since, epoch: fields.epoch, id: fields.id)
        case "unsubscribe":
            guard let topic = fields.topic else { throw .missingField("topic") }
            return .unsubscribe(topic: topic, id: fields.id)
        case "auth":
            guard let token = fields.token else { throw .missingField("token") }
            return .auth(token: token, id: fields.id)
        case "ping":
            return .ping(id: fields.id)
        default:
            throw .unknownOp(String(op.prefix(32)))
        }
    }

    /// A short, client-safe description of a JSON decoding failure (which field, not a dump).
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            if let key = context.codingPath.last?.stringValue { return "field '\(key)' has the wrong type" }
            return "expected a JSON object"
        case .dataCorrupted(let context):
            if let key = context.codingPath.last?.stringValue { return "field '\(key)' is invalid" }
            return "not JSON"
        case .keyNotFound(let key, _):
            return "missing field '\(key.stringValue)'"
        @unknown default:
            return "not JSON"
        }
    }
}

extension RequestID: Decodable {
    /// A string (≤ 64 characters) or an integer.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self = .number(number)
            return
        }
        let text = try container.decode(String.self)
        guard text.utf8.count <= 64 else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "id longer than 64 bytes")
        }
        self = .string(text)
    }
}
