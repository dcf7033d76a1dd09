/// Outbound mail (docs/configuration.md#mail). Without `smtpURL` the server runs without mail: what
/// would be mailed is recorded `unsendable` and `chronir-admin` stands in (docs/mail.md#without-mail).
public struct MailConfiguration: Sendable {
    /// `smtp://host[:port]` (STARTTLS required) or `smtps://host[:port]` (`--smtp-url`); nil: no mail.
    public var smtpURL: String? = nil
    /// SMTP AUTH user (`--smtp-username`); nil: no AUTH.
    public var username: String? = nil
    /// SMTP AUTH password (`CHRONIR_SMTP_PASSWORD` or the file `--smtp-password-file` names).
    public var password: String? = nil
    /// The sender address (`--mail-from`), required with `smtpURL`: envelope `MAIL FROM` and `From:`.
    public var from: String? = nil

    /// Whether mail can be sent.
    public var isConfigured: Bool { smtpURL != nil }

    public init() {}
}
