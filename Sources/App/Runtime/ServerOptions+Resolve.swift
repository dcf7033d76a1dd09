import Domain
import Foundation
import Identity
import Transport

extension ServerOptions {
    /// The configuration `arguments` (without the program name) and `environment` describe: a flag
    /// wins over its `CHRONIR_*` variable, and an empty text counts as unset. Throws a
    /// `ConfigurationError` naming the flag for an unknown flag, a missing or refused value, or
    /// settings that only work together (APNs, mail, sign-in, TLS, the metrics token).
    public static func configuration(arguments: [String], environment: [String: String]) throws(ConfigurationError)
        -> ChronirConfiguration
    {
        let options = all
        let byName = Dictionary(uniqueKeysWithValues: options.map { ($0.name, $0) })
        var texts: [String: String] = [:]
        for option in options {
            if let text = environment[option.environmentVariable], !text.isEmpty { texts[option.name] = text }
        }
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else { throw ConfigurationError("unexpected argument '\(argument)'") }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            guard let option = byName[name] else { throw ConfigurationError("unknown option '--\(name)'") }
            let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            if option.isSwitch {
                guard inline == nil else { throw ConfigurationError("--\(name) takes no value") }
                texts[name] = "true"
                continue
            }
            let text: String
            if let inline {
                text = inline
            } else {
                guard index < arguments.endIndex else {
                    throw ConfigurationError("missing value for '--\(name) <\(option.valueName ?? "")>'")
                }
                text = arguments[index]
                index += 1
            }
            if text.isEmpty { texts[name] = nil } else { texts[name] = text }
        }
        var configuration = ChronirConfiguration()
        for option in options {
            guard let text = texts[option.name] else { continue }
            do {
                try option.apply(text, &configuration)
            } catch {
                throw ConfigurationError("invalid value '\(text)' for \(option.flag): \(error.expected)")
            }
        }
        try configuration.resolve(environment: environment)
        return configuration
    }
}

extension ChronirConfiguration {
    /// Derives the defaults that depend on other settings and checks the settings that only work
    /// together; builds the notification, mail, sign-in and TLS settings from their pending texts.
    mutating func resolve(environment: [String: String]) throws(ConfigurationError) {
        app.publicBaseURL = publicBaseURL ?? AppConfiguration.Defaults.publicBaseURL(host: host, port: "\(port)")
        app.publicDirectory = publicDirectoryText == AppConfiguration.Defaults.noPublicDirectory ? nil : publicDirectoryText
        app.maxWebSocketsPerAddress =
            maxWebSocketsPerAddress ?? ServerConfiguration.defaultPerAddressLimit(maxConnections: maxConnections)
        app.notifications.apns = try resolveAPNs()
        app.mail = try resolveMail(environment: environment)
        app.oidc.apple = try resolveProvider(.apple)
        app.oidc.google = try resolveProvider(.google)
        app.subscriptions = try resolveSubscriptions()
        tls = try resolveTLS()
        if let metricsToken, metricsToken.utf8.count < MetricsExposure.minimumTokenLength {
            throw ConfigurationError("--metrics-token must be at least \(MetricsExposure.minimumTokenLength) characters")
        }
        // No separate port: the token (if any) puts /metrics on the API port; no token, no /metrics.
        app.metrics = MetricsExposure(onMainPort: metricsPort == nil && metricsToken != nil, token: metricsToken)
    }

    private func resolveAPNs() throws(ConfigurationError) -> NotificationsConfiguration.APNs? {
        let parts = ["apns-key-file", "apns-key-id", "apns-team-id", "apns-topic"].map { pending[$0] }
        guard parts.contains(where: { $0 != nil }) else { return nil }
        guard let keyFile = parts[0], let keyID = parts[1], let teamID = parts[2], let topic = parts[3] else {
            throw ConfigurationError("APNs needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic")
        }
        let environmentName = pending["apns-environment"] ?? "production"
        guard let environment = NotificationsConfiguration.APNs.Environment(rawValue: environmentName.lowercased()) else {
            throw ConfigurationError("invalid value '\(environmentName)' for --apns-environment: production, sandbox")
        }
        return NotificationsConfiguration.APNs(
            keyFile: keyFile, sender: APNsSender.Configuration(keyID: keyID, teamID: teamID, topic: topic, environment: environment))
    }

    /// The password comes from the file or `CHRONIR_SMTP_PASSWORD` (never a flag: it would show in `ps`).
    private func resolveMail(environment: [String: String]) throws(ConfigurationError) -> MailConfiguration {
        var mail = MailConfiguration()
        guard let url = pending["smtp-url"] else { return mail }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("smtp://") || lowered.hasPrefix("smtps://") else {
            throw ConfigurationError("--smtp-url must be smtp://host[:port] (STARTTLS) or smtps://host[:port]")
        }
        guard let from = pending["mail-from"] else { throw ConfigurationError("--smtp-url needs --mail-from") }
        guard from.contains("@"), from.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0 != "<" && $0 != ">" }) else {
            throw ConfigurationError("--mail-from must be a bare address (name@example.com)")
        }
        mail.smtpURL = url
        mail.from = from
        mail.username = pending["smtp-username"]
        if let file = pending["smtp-password-file"] {
            guard let data = FileManager.default.contents(atPath: file) else { throw ConfigurationError("cannot read \(file)") }
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            mail.password = text
        } else {
            mail.password = environment["CHRONIR_SMTP_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        }
        if mail.password != nil, mail.username == nil {
            throw ConfigurationError("an SMTP password needs --smtp-username")
        }
        return mail
    }

    /// Google Play from `--play-service-account-file` and `--play-package-name` (both or neither), the
    /// API origin and the RTDN secret.
    private func resolvePlay(into subscriptions: inout SubscriptionConfiguration) throws(ConfigurationError) {
        guard let file = pending["play-service-account-file"] else {
            for set in ["play-package-name", "play-api-url", "play-rtdn-token-file", "play-rtdn-audience", "play-rtdn-service-account"]
            where pending[set] != nil {
                throw ConfigurationError("--\(set) needs --play-service-account-file")
            }
            return
        }
        guard let package = pending["play-package-name"], !package.isEmpty,
            package.utf8.allSatisfy({ $0 == 0x2e || $0 == 0x5f || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) })
        else { throw ConfigurationError("--play-service-account-file needs --play-package-name (a Java package name)") }
        let apiURL = pending["play-api-url"] ?? PlayDeveloperAPI.defaultBaseURL
        guard apiURL.hasPrefix("https://") else { throw ConfigurationError("--play-api-url \(apiURL): an https URL") }
        subscriptions.playSettings = .init(serviceAccountFile: file, packageName: package, apiURL: apiURL)
        if let tokenFile = pending["play-rtdn-token-file"] {
            guard let data = FileManager.default.contents(atPath: tokenFile) else { throw ConfigurationError("cannot read \(tokenFile)") }
            var text = String(decoding: data, as: UTF8.self)
            if text.hasSuffix("\n") { text.removeLast() }
            guard text.utf8.count >= 16, !text.contains(where: { $0.isWhitespace || $0 == "&" || $0 == "#" }) else {
                throw ConfigurationError("--play-rtdn-token-file \(tokenFile): at least 16 bytes, no spaces, & or #")
            }
            subscriptions.playRTDNToken = text
        }
        if let audience = pending["play-rtdn-audience"] {
            guard !audience.isEmpty else { throw ConfigurationError("--play-rtdn-audience: not empty") }
            let account = pending["play-rtdn-service-account"]
            if let account, !account.contains("@") { throw ConfigurationError("--play-rtdn-service-account \(account): an email address") }
            subscriptions.playRTDNPush = .init(audience: audience, serviceAccount: account)
        } else if pending["play-rtdn-service-account"] != nil {
            throw ConfigurationError("--play-rtdn-service-account needs --play-rtdn-audience")
        }
    }

    /// The catalogue from `--products-file`, App Store verification when `--appstore-bundle-id` is set.
    private func resolveSubscriptions() throws(ConfigurationError) -> SubscriptionConfiguration {
        var subscriptions = SubscriptionConfiguration()
        if let file = pending["products-file"] {
            guard let data = FileManager.default.contents(atPath: file) else { throw ConfigurationError("cannot read \(file)") }
            do {
                subscriptions.catalogue = try ProductCatalogue(json: Array(data))
            } catch {
                throw ConfigurationError("--products-file \(file): \(error.message)")
            }
        }
        if let rule = pending["purchase-transfer"] {
            guard let parsed = SubscriptionConfiguration.PurchaseTransfer(rawValue: rule) else {
                throw ConfigurationError("invalid value '\(rule)' for --purchase-transfer: refuse, transfer")
            }
            subscriptions.purchaseTransfer = parsed
        }
        try resolvePlay(into: &subscriptions)
        let dependent = [
            "appstore-environment", "appstore-app-apple-id", "appstore-root-ca", "appstore-key-file", "appstore-key-id",
            "appstore-issuer-id", "appstore-api-url",
        ]
        guard let bundleID = pending["appstore-bundle-id"] else {
            if let set = dependent.first(where: { pending[$0] != nil }) {
                throw ConfigurationError("--\(set) needs --appstore-bundle-id")
            }
            return subscriptions
        }
        let environmentName = pending["appstore-environment"] ?? AppStoreVerifier.Environment.production.rawValue
        guard let environment = AppStoreVerifier.Environment(rawValue: environmentName) else {
            throw ConfigurationError(
                "invalid value '\(environmentName)' for --appstore-environment: Production, Sandbox, Xcode, LocalTesting")
        }
        var appAppleID: Int64?
        if let text = pending["appstore-app-apple-id"] {
            guard let number = Int64(text), number > 0 else {
                throw ConfigurationError("invalid value '\(text)' for --appstore-app-apple-id: a positive integer")
            }
            appAppleID = number
        }
        // Apple's library: appAppleId is required in Production (notifications must name the app).
        if environment == .production, appAppleID == nil {
            throw ConfigurationError("--appstore-environment Production needs --appstore-app-apple-id")
        }
        var roots = [AppStoreVerifier.appleRootCAG3]
        if let file = pending["appstore-root-ca"] {
            guard let data = FileManager.default.contents(atPath: file) else { throw ConfigurationError("cannot read \(file)") }
            roots = AppStoreRootCertificates.parse(Array(data))
            guard !roots.isEmpty else { throw ConfigurationError("--appstore-root-ca \(file): no PEM or DER certificate") }
        }
        subscriptions.appStore = AppStoreVerifier(roots: roots, bundleID: bundleID, environment: environment, appAppleID: appAppleID)
        subscriptions.appStoreAPISettings = try resolveAppStoreAPI(bundleID: bundleID, environment: environment)
        return subscriptions
    }

    /// The App Store Server API from `--appstore-key-file` with `--appstore-key-id` and `--appstore-issuer-id`
    /// (all three or none); the origin by environment unless `--appstore-api-url`. The key itself is read at start-up.
    private func resolveAppStoreAPI(
        bundleID: String, environment: AppStoreVerifier.Environment
    ) throws(ConfigurationError) -> SubscriptionConfiguration.AppStoreAPISettings? {
        guard let keyFile = pending["appstore-key-file"] else {
            for set in ["appstore-key-id", "appstore-issuer-id", "appstore-api-url"] where pending[set] != nil {
                throw ConfigurationError("--\(set) needs --appstore-key-file")
            }
            return nil
        }
        guard let keyID = pending["appstore-key-id"], !keyID.isEmpty, let issuerID = pending["appstore-issuer-id"], !issuerID.isEmpty
        else { throw ConfigurationError("--appstore-key-file needs --appstore-key-id and --appstore-issuer-id") }
        let apiURL = pending["appstore-api-url"] ?? AppStoreServerAPI.defaultURL(for: environment)
        guard apiURL.hasPrefix("https://") else { throw ConfigurationError("--appstore-api-url \(apiURL): an https URL") }
        return .init(keyFile: keyFile, api: .init(keyID: keyID, issuerID: issuerID, bundleID: bundleID, baseURL: apiURL))
    }

    /// A provider is on when it has client ids; its key-set URL and issuer default to the provider's own.
    private func resolveProvider(_ provider: SignInProvider) throws(ConfigurationError) -> OIDCConfiguration.Provider? {
        let prefix = "oidc-\(provider.rawValue)"
        let flag = "--" + prefix
        let ids = ServerOption.splitList(pending["\(prefix)-client-ids"] ?? "")
        let url = pending["\(prefix)-jwks-url"]
        let issuer = pending["\(prefix)-issuer"]
        let web = pending["\(prefix)-web-client-id"]?.trimmingCharacters(in: .whitespaces)
        guard !ids.isEmpty else {
            if url != nil || issuer != nil || web != nil {
                throw ConfigurationError("\(flag)-jwks-url, \(flag)-issuer and \(flag)-web-client-id need \(flag)-client-ids")
            }
            return nil
        }
        if let url, !url.lowercased().hasPrefix("https://") { throw ConfigurationError("\(flag)-jwks-url must be an https URL") }
        if let web, !ids.contains(web) { throw ConfigurationError("\(flag)-web-client-id must be one of \(flag)-client-ids") }
        return OIDCConfiguration.Provider(
            clientIDs: ids, jwksURL: url ?? OIDCConfiguration.defaultJWKSURL(provider), issuer: issuer, webClientID: web)
    }

    private func resolveTLS() throws(ConfigurationError) -> TLSSettings? {
        let maxAge = hstsMaxAgeSeconds
        let redirect = httpRedirectPort
        switch (pending["tls-cert"], pending["tls-key"]) {
        case (nil, nil):
            if redirect != nil { throw ConfigurationError("--http-redirect-port needs --tls-cert and --tls-key") }
            return nil
        case (.some, nil): throw ConfigurationError("--tls-cert needs --tls-key")
        case (nil, .some): throw ConfigurationError("--tls-key needs --tls-cert")
        case (.some(let certificate), .some(let key)):
            return TLSSettings(certificatePath: certificate, keyPath: key, hstsMaxAge: maxAge == 0 ? nil : maxAge, redirectPort: redirect)
        }
    }
}
