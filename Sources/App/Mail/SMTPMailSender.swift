import Domain
public import Outbound
public import Store

/// Sends one claimed mail over SMTP through the shared `OutboundClient` (libcurl's SMTP on the same
/// multi handle and Dispatch queue as HTTP: no thread blocks per mail). Why libcurl: it is already
/// the server's outbound stack, speaks SMTP with STARTTLS and AUTH, verifies certificates like the
/// HTTP senders do, and is one of the best-kept network libraries there is — a hand-written SMTP
/// client would be a second TLS and protocol implementation to keep right.
///
/// Outcomes (`SendOutcome`, settled by `MailDispatcher`): 250 → delivered; a 4xx reply, timeouts,
/// connection and TLS failures → retry with back-off; a 5xx reply (bad recipient, refused sender,
/// AUTH refused) → rejected, logged.
public struct SMTPMailSender: Sendable {
    private let client: OutboundClient
    private let config: MailConfiguration
    private let from: String
    private let url: String
    /// Per-mail deadline: connect, TLS, AUTH and DATA together.
    public var timeout: Duration = .seconds(30)

    /// A sender for `config` (which must have `smtpURL` and `from`) over `client` (the caller closes it).
    public init?(config: MailConfiguration, client: OutboundClient) {
        guard let url = config.smtpURL, let from = config.from else { return nil }
        self.client = client
        self.config = config
        self.url = url
        self.from = from
    }

    /// Renders and submits `mail` at `now`.
    /// A recipient outside `EmailAddress.hasMailableShape` (one stored before the grammar, or written
    /// by anything but the API) is rejected without a connection: `To:` and `RCPT TO` never carry a
    /// comment, a quoted string or a second address.
    public func send(_ mail: MailOutbox.Mail, now: Int64) async -> SendOutcome {
        guard EmailAddress.hasMailableShape(mail.recipient) else {
            return .rejected(reason: "recipient address refused: outside the grammar this server mails (docs/mail.md#addresses)")
        }
        let content = MailContent(
            kind: mail.kind, recipient: mail.recipient, subject: mail.subject, body: mail.body, userID: nil,
            expiresAt: mail.expiresAt)
        let message = MailMessage.render(
            content, from: from, dateSeconds: Int(mail.createdAt / 1_000), messageID: MailMessage.messageID(from: from))
        do {
            _ = try await client.send(
                OutboundMail(
                    url: url, from: from, recipients: [mail.recipient], message: message, username: config.username,
                    password: config.password, timeout: timeout))
            return .delivered
        } catch {
            return ProviderExchange.outcome(of: error, provider: "smtp")
        }
    }
}
