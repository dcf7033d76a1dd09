import App
import ArgumentParser
import Foundation

/// `chronir-server`'s mail flags (docs/configuration.md#mail), resolved with their `CHRONIR_*`
/// environment variables into `MailConfig`.
struct MailOptions: ParsableArguments {
    @Option(
        help: """
            SMTP submission server: smtp://host:587 (STARTTLS required) or smtps://host:465. [env: CHRONIR_SMTP_URL] \
            (default: no mail; see docs/mail.md#without-mail)
            """)
    var smtpUrl: String?

    @Option(help: "SMTP AUTH user name. [env: CHRONIR_SMTP_USERNAME] (default: no AUTH)")
    var smtpUsername: String?

    @Option(help: "File holding the SMTP AUTH password (trailing newline ignored). [env: CHRONIR_SMTP_PASSWORD_FILE]")
    var smtpPasswordFile: String?

    @Option(help: "Sender address of every mail (From: and MAIL FROM). [env: CHRONIR_MAIL_FROM] (required with --smtp-url)")
    var mailFrom: String?

    /// The configuration these flags and `environment` describe. The password comes from
    /// `CHRONIR_SMTP_PASSWORD` or the password file (never a flag: it would show in `ps`).
    func resolve(_ options: OptionValues) throws -> MailConfig {
        let value = options.value
        var config = MailConfig()
        guard let url = value(smtpUrl, "SMTP_URL") else { return config }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("smtp://") || lowered.hasPrefix("smtps://") else {
            throw ValidationError("--smtp-url must be smtp://host[:port] (STARTTLS) or smtps://host[:port]")
        }
        guard let from = value(mailFrom, "MAIL_FROM") else { throw ValidationError("--smtp-url needs --mail-from") }
        guard from.contains("@"), from.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0 != "<" && $0 != ">" }) else {
            throw ValidationError("--mail-from must be a bare address (name@example.com)")
        }
        config.smtpURL = url
        config.from = from
        config.username = value(smtpUsername, "SMTP_USERNAME")
        if let file = value(smtpPasswordFile, "SMTP_PASSWORD_FILE") {
            guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read \(file)") }
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            config.password = text
        } else {
            config.password = value(nil, "SMTP_PASSWORD")
        }
        if config.password != nil, config.username == nil {
            throw ValidationError("an SMTP password needs --smtp-username")
        }
        return config
    }
}
