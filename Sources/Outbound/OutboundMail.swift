/// One mail for `OutboundClient.send(_:)`: SMTP submission of a finished RFC 5322 message
/// (docs/mail.md). The client speaks SMTP through libcurl on the same multi handle and queue as
/// HTTP; TLS is always required — `smtps://` (implicit TLS, RFC 8314) or `smtp://` with STARTTLS,
/// where a server that does not offer STARTTLS fails the transfer (`CURLUSESSL_ALL`) instead of
/// sending the message in the clear.
public struct OutboundMail: Sendable {
    /// `smtp://host[:port][/ehlo-domain]` or `smtps://host[:port][/ehlo-domain]`.
    public var url: String
    /// The envelope sender (`MAIL FROM`), a bare address.
    public var from: String
    /// The envelope recipients (`RCPT TO`), bare addresses; at least one.
    public var recipients: [String]
    /// The message: header fields, an empty line, the body, lines ending in CRLF. libcurl escapes
    /// a leading `.` on a line (RFC 5321 §4.5.2).
    public var message: [UInt8]
    /// SMTP AUTH user name; nil sends no AUTH.
    public var username: String?
    /// SMTP AUTH password (with `username`).
    public var password: String?
    /// The whole exchange's deadline; nil takes `OutboundLimits.totalTimeout`.
    public var timeout: Duration?

    /// A mail; see the properties.
    public init(
        url: String, from: String, recipients: [String], message: [UInt8], username: String? = nil, password: String? = nil,
        timeout: Duration? = nil
    ) {
        self.url = url
        self.from = from
        self.recipients = recipients
        self.message = message
        self.username = username
        self.password = password
        self.timeout = timeout
    }

    /// Whether `address` can go into an SMTP path as given: non-empty, at most 254 bytes, no
    /// controls, spaces or angle brackets (what would let it split or extend an SMTP command).
    public static func isValidPath(_ address: String) -> Bool {
        !address.isEmpty && address.utf8.count <= 254
            && address.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "<" && $0 != ">" }
    }
}

/// What the SMTP server said when it took a mail.
public struct MailReceipt: Sendable, Equatable {
    /// The reply code to the end of `DATA` (250).
    public var replyCode: Int
    /// Connections opened for it (0 when a pooled one was reused).
    public var newConnections: Int
}
