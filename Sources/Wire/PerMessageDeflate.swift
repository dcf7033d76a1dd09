/// What the server is willing to agree to for permessage-deflate (RFC 7692 §7).
public struct PerMessageDeflateConfiguration: Sendable, Equatable {
    /// Answer every accepted offer with `server_no_context_takeover` (RFC 7692 §7.1.1.1 lets a
    /// server add it unasked). Each message is then compressed on its own, so one compressed
    /// encoding of a broadcast is valid for every subscriber (`WebSocketEncodedMessage`), and no
    /// window is kept per idle connection. Default true.
    public var serverNoContextTakeover = true
    /// Largest LZ77 window (log2, 8…15) the server compresses with; a smaller client offer wins.
    public var serverMaxWindowBits = 15
    /// Largest window (log2, 8…15) the server lets the client compress with, when the client's
    /// offer allows limiting it (`client_max_window_bits`); bounds the inflate memory.
    public var clientMaxWindowBits = 15
    /// zlib compression level, 0…9.
    public var compressionLevel = 6

    /// The defaults above.
    public init() {}

    /// A configuration with the given values; omitted ones keep their defaults.
    public init(
        serverNoContextTakeover: Bool = true, serverMaxWindowBits: Int = 15, clientMaxWindowBits: Int = 15, compressionLevel: Int = 6
    ) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.serverMaxWindowBits = min(max(serverMaxWindowBits, 8), 15)
        self.clientMaxWindowBits = min(max(clientMaxWindowBits, 8), 15)
        self.compressionLevel = min(max(compressionLevel, 0), 9)
    }
}

/// The permessage-deflate parameters agreed for one connection.
public struct PerMessageDeflateParameters: Sendable, Equatable {
    /// The server resets its compressor after every message.
    public var serverNoContextTakeover: Bool
    /// The client resets its compressor after every message (so the server may reset its inflater).
    public var clientNoContextTakeover: Bool
    /// Log2 of the window the server compresses with, 8…15.
    public var serverMaxWindowBits: Int
    /// Log2 of the largest window the client may compress with, 8…15 (15 unless limited).
    public var clientMaxWindowBits: Int
    /// zlib compression level for outgoing messages.
    public var compressionLevel: Int

    /// Parameters as stated; the defaults are RFC 7692's when the offer and response name none.
    public init(
        serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false, serverMaxWindowBits: Int = 15,
        clientMaxWindowBits: Int = 15, compressionLevel: Int = 6
    ) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
        self.compressionLevel = compressionLevel
    }
}

/// Negotiation of permessage-deflate from a client's `Sec-WebSocket-Extensions` (RFC 7692 §5, §7).
public enum PerMessageDeflate {
    /// The extension name.
    public static let name = "permessage-deflate"

    /// One extension of a `Sec-WebSocket-Extensions` list: its name and parameters (values
    /// unquoted; nil when a parameter has no value).
    public struct Extension: Sendable, Equatable {
        /// The extension token, e.g. "permessage-deflate".
        public var name: String
        /// Its parameters, in order.
        public var parameters: [Parameter]
        /// An extension with these parameters.
        public init(name: String, parameters: [Parameter]) {
            self.name = name
            self.parameters = parameters
        }
    }

    /// A parameter of an extension offer.
    public struct Parameter: Sendable, Equatable {
        /// The parameter token, e.g. "client_max_window_bits".
        public var name: String
        /// Its value, unquoted; nil when it has none.
        public var value: String?
        /// A parameter with this value.
        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// The outcome of negotiation: the parameters and the response header value
    /// (`Sec-WebSocket-Extensions`) that states them.
    public struct Agreement: Sendable, Equatable {
        /// What both sides use.
        public var parameters: PerMessageDeflateParameters
        /// The `Sec-WebSocket-Extensions` value of the 101 response.
        public var responseHeaderValue: String
    }

    /// The first acceptable `permessage-deflate` offer among every `Sec-WebSocket-Extensions`
    /// value (in order), or nil. An offer with an unknown, duplicate or malformed parameter is
    /// declined (RFC 7692 §5.1) and the next one considered; other extensions are ignored; a list
    /// element that is not valid extension syntax is skipped.
    public static func negotiate(offers headerValues: [String], configuration: PerMessageDeflateConfiguration) -> Agreement? {
        for value in headerValues {
            for offer in parseExtensions(value) where HTTPHeaders.namesEqual(offer.name, name) {
                if let agreement = accept(offer, configuration: configuration) { return agreement }
            }
        }
        return nil
    }

    /// The agreement for one offer, or nil when it must be declined.
    static func accept(_ offer: Extension, configuration: PerMessageDeflateConfiguration) -> Agreement? {
        var serverNoContextTakeover = false
        var clientNoContextTakeover = false
        var serverMaxWindowBits: Int?
        var clientMaxWindowBits: Int??  // .some(nil): offered without a value
        var seen: Set<String> = []
        for parameter in offer.parameters {
            let key = parameter.name.lowercased()
            guard seen.insert(key).inserted else { return nil }  // RFC 7692 §7: no duplicates
            switch key {
            case "server_no_context_takeover":
                guard parameter.value == nil else { return nil }
                serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard parameter.value == nil else { return nil }
                clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = windowBits(parameter.value) else { return nil }
                serverMaxWindowBits = bits
            case "client_max_window_bits":
                if let value = parameter.value {
                    guard let bits = windowBits(value) else { return nil }
                    clientMaxWindowBits = .some(bits)
                } else {
                    clientMaxWindowBits = .some(nil)
                }
            default:
                return nil
            }
        }

        var response = name
        var parameters = PerMessageDeflateParameters(compressionLevel: configuration.compressionLevel)
        parameters.serverNoContextTakeover = serverNoContextTakeover || configuration.serverNoContextTakeover
        if parameters.serverNoContextTakeover { response += "; server_no_context_takeover" }
        parameters.clientNoContextTakeover = clientNoContextTakeover
        if clientNoContextTakeover { response += "; client_no_context_takeover" }
        let serverBits = min(serverMaxWindowBits ?? 15, configuration.serverMaxWindowBits)
        parameters.serverMaxWindowBits = serverBits
        if serverMaxWindowBits != nil || serverBits < 15 { response += "; server_max_window_bits=\(serverBits)" }
        if case .some(let offered) = clientMaxWindowBits {
            let clientBits = min(offered ?? 15, configuration.clientMaxWindowBits)
            parameters.clientMaxWindowBits = clientBits
            if clientBits < (offered ?? 15) || (offered == nil && clientBits < 15) {
                response += "; client_max_window_bits=\(clientBits)"
            }
        } else {
            // The client did not say it can limit its window: inflate with the largest.
            parameters.clientMaxWindowBits = 15
        }
        return Agreement(parameters: parameters, responseHeaderValue: response)
    }

    /// A window-bits value: 1*DIGIT in 8…15 without leading zeros (RFC 7692 §7.1.2).
    static func windowBits(_ value: String?) -> Int? {
        guard let value, value.utf8.count <= 2, value.utf8.first != UInt8(ascii: "0"),
            value.utf8.allSatisfy(ASCII.isDigit), let bits = Int(value), (8...15).contains(bits)
        else { return nil }
        return bits
    }

    /// The extensions of one `Sec-WebSocket-Extensions` value (RFC 6455 §9.1):
    ///
    /// ```
    /// extension-list  = 1#extension
    /// extension       = extension-token *( ";" extension-param )
    /// extension-param = token [ "=" (token | quoted-string) ]
    /// ```
    /// Elements that do not match are skipped; empty elements are ignored.
    public static func parseExtensions(_ value: String) -> [Extension] {
        var scanner = ExtensionScanner(Array(value.utf8))
        var result: [Extension] = []
        while true {
            scanner.skipWhitespace()
            if scanner.atEnd { break }
            if scanner.bytes[scanner.i] == ASCII.comma {
                scanner.i += 1
                continue
            }
            if let element = scanner.element() { result.append(element) } else { scanner.skipElement() }
        }
        return result
    }
}

/// A cursor over a `Sec-WebSocket-Extensions` value.
private struct ExtensionScanner {
    let bytes: [UInt8]
    var i = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { i >= bytes.count }

    mutating func skipWhitespace() {
        while i < bytes.count, ASCII.isWhitespace(bytes[i]) { i += 1 }
    }

    mutating func token() -> String? {
        let begin = i
        while i < bytes.count, ASCII.isTchar(bytes[i]) { i += 1 }
        return i > begin ? String(decoding: bytes[begin..<i], as: UTF8.self) : nil
    }

    mutating func quotedString() -> String? {
        guard i < bytes.count, bytes[i] == ASCII.dquote else { return nil }
        i += 1
        var content: [UInt8] = []
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            if b == ASCII.dquote { return String(decoding: content, as: UTF8.self) }
            if b == ASCII.backslash {
                guard i < bytes.count else { return nil }
                content.append(bytes[i])
                i += 1
            } else {
                content.append(b)
            }
        }
        return nil
    }

    /// Parses one element up to and including its comma (or the end); nil on a syntax error,
    /// leaving `i` inside the element. Starts at a non-empty element.
    mutating func element() -> PerMessageDeflate.Extension? {
        guard let name = token() else { return nil }
        var parameters: [PerMessageDeflate.Parameter] = []
        while true {
            skipWhitespace()
            if atEnd { break }
            if bytes[i] == ASCII.comma {
                i += 1
                break
            }
            guard bytes[i] == ASCII.semicolon else { return nil }
            i += 1
            skipWhitespace()
            guard let key = token() else { return nil }
            skipWhitespace()
            var value: String?
            if i < bytes.count, bytes[i] == ASCII.equals {
                i += 1
                skipWhitespace()
                if i < bytes.count, bytes[i] == ASCII.dquote {
                    // RFC 6455 §9.1: a quoted value must still be a token once unquoted.
                    guard let quoted = quotedString(), !quoted.isEmpty, quoted.utf8.allSatisfy(ASCII.isTchar)
                    else { return nil }
                    value = quoted
                } else {
                    guard let plain = token() else { return nil }
                    value = plain
                }
            }
            parameters.append(PerMessageDeflate.Parameter(name: key, value: value))
        }
        return PerMessageDeflate.Extension(name: name, parameters: parameters)
    }

    /// Skips to just past the next comma outside a quoted string (or to the end).
    mutating func skipElement() {
        var quoted = false
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            if quoted {
                if b == ASCII.backslash { i += 1 } else if b == ASCII.dquote { quoted = false }
            } else if b == ASCII.dquote {
                quoted = true
            } else if b == ASCII.comma {
                return
            }
        }
    }
}
