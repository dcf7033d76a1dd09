import App
import ArgumentParser

/// `chronir-server`'s notification flags (docs/configuration.md#notifications), resolved with their
/// `CHRONIR_*` environment variables into `NotificationsConfig`.
struct NotificationOptions: ParsableArguments {
    @Option(
        help: """
            Operator webhook: every notification as signed JSON (https, or http; any address). \
            [env: CHRONIR_NOTIFY_WEBHOOK_URL] (default: off)
            """)
    var notifyWebhookUrl: String?

    @Option(help: "File with the webhook's HMAC secret (≥ 16 bytes). [env: CHRONIR_NOTIFY_WEBHOOK_SECRET_FILE]")
    var notifyWebhookSecretFile: String?

    @Option(
        help: """
            Web Push: on|off; the VAPID key is generated into the data directory. [env: CHRONIR_WEB_PUSH] (default: on)
            """)
    var webPush: String?

    @Option(
        help: """
            VAPID contact (mailto: or https:). [env: CHRONIR_VAPID_SUBJECT] (default: the public base URL when https, \
            else mailto:admin@localhost)
            """)
    var vapidSubject: String?

    @Option(help: "APNs signing key (.p8, PKCS#8 PEM). [env: CHRONIR_APNS_KEY_FILE] (default: APNs off)")
    var apnsKeyFile: String?

    @Option(help: "APNs key id (10 characters). [env: CHRONIR_APNS_KEY_ID]")
    var apnsKeyId: String?

    @Option(help: "Apple developer team id. [env: CHRONIR_APNS_TEAM_ID]")
    var apnsTeamId: String?

    @Option(help: "APNs topic: the iOS app's bundle id. [env: CHRONIR_APNS_TOPIC]")
    var apnsTopic: String?

    @Option(help: "production|sandbox. [env: CHRONIR_APNS_ENVIRONMENT] (default: production)")
    var apnsEnvironment: String?

    @Option(help: "FCM HTTP v1 service-account JSON file. [env: CHRONIR_FCM_SERVICE_ACCOUNT_FILE] (default: FCM off)")
    var fcmServiceAccountFile: String?

    @Flag(
        help: """
            Allow users' Web Push endpoints on private, loopback and link-local addresses (tests, a LAN push \
            service); the operator's webhook, key sets and SMTP server never need it. [env: CHRONIR_PUSH_ALLOW_PRIVATE_ENDPOINTS=1]
            """)
    var pushAllowPrivateEndpoints = false

    @Option(help: "CA bundle outbound TLS trusts instead of the system's (tests, private CAs). [env: CHRONIR_OUTBOUND_CA_FILE]")
    var outboundCaFile: String?

    /// The configuration these flags (or their variables) describe; a partial APNs setting or an
    /// unknown value is a `ValidationError` naming the flag.
    func resolve(_ options: OptionValues) throws -> NotificationsConfig {
        let value = options.value
        var config = NotificationsConfig()
        config.webhookURL = value(notifyWebhookUrl, "NOTIFY_WEBHOOK_URL")
        config.webhookSecretFile = value(notifyWebhookSecretFile, "NOTIFY_WEBHOOK_SECRET_FILE")
        switch value(webPush, "WEB_PUSH")?.lowercased() {
        case nil, "on": config.webPushEnabled = true
        case "off": config.webPushEnabled = false
        case let other?: throw ValidationError("invalid value '\(other)' for web-push (on|off)")
        }
        config.vapidSubject = value(vapidSubject, "VAPID_SUBJECT")
        let apns = [
            value(apnsKeyFile, "APNS_KEY_FILE"), value(apnsKeyId, "APNS_KEY_ID"), value(apnsTeamId, "APNS_TEAM_ID"),
            value(apnsTopic, "APNS_TOPIC"),
        ]
        if apns.contains(where: { $0 != nil }) {
            guard let keyFile = apns[0], let keyID = apns[1], let teamID = apns[2], let topic = apns[3] else {
                throw ValidationError("APNs needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic")
            }
            let environmentName = value(apnsEnvironment, "APNS_ENVIRONMENT") ?? "production"
            guard let apnsEnvironment = NotificationsConfig.APNs.Environment(rawValue: environmentName.lowercased()) else {
                throw ValidationError("invalid value '\(environmentName)' for apns-environment (production|sandbox)")
            }
            config.apns = NotificationsConfig.APNs(
                keyFile: keyFile, keyID: keyID, teamID: teamID, topic: topic, environment: apnsEnvironment)
        }
        config.fcmServiceAccountFile = value(fcmServiceAccountFile, "FCM_SERVICE_ACCOUNT_FILE")
        config.allowPrivateEndpoints = options.isOn(pushAllowPrivateEndpoints, "PUSH_ALLOW_PRIVATE_ENDPOINTS")
        config.caFile = value(outboundCaFile, "OUTBOUND_CA_FILE")
        return config
    }
}
