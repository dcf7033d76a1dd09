import Domain
import Foundation
import Hashing
import Store
import Wire

/// `GET /v1/config` (no sign-in; docs/apps.md#get-v1config): what a client must respect and may use —
/// the server's limits (read from the constants and settings the server enforces, never a copy), the
/// operator's feature flags and minimum app versions (`AppsConfiguration`, reloaded on SIGHUP), the push
/// channels and VAPID key, the sign-in providers. `ETag` (SHA-256 of the body) and `If-None-Match` → 304.
enum ConfigRoutes {
    static let path = "/v1/config"
    /// Clients may reuse the document this long without asking; after it they revalidate with the ETag.
    static let maxAgeSeconds = 300

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, path, .sync { request in respond(request, services) })
    }

    static func respond(_ request: Request, _ services: Services) -> HTTPResponse {
        let body = DocumentCoding.encode(document(services))
        let etag = "\"" + Hex.encode(Array(SHA256.hash(body).prefix(16))) + "\""
        let headers: HTTPHeaders = ["ETag": etag, "Cache-Control": "public, max-age=\(maxAgeSeconds)"]
        if let candidates = request.headers[first: "if-none-match"], matches(candidates, etag) {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        var response = HTTPResponse(status: .ok, headers: headers, body: body)
        response.headers.add(name: "Content-Type", value: JSONText.contentType)
        return response
    }

    /// RFC 9110 §13.1.2: `*`, or a list of entity tags compared weakly (`W/` ignored).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { item in
            var tag = item.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }

    /// The document, as of this request.
    static func document(_ services: Services) -> ConfigDocument {
        let config = services.config
        let apps = services.apps.current
        let attachments = config.attachments
        var signIn = ["password"]
        for provider in SignInProvider.allCases where config.oidc.provider(provider) != nil { signIn.append(provider.rawValue) }
        return ConfigDocument(
            limits: .init(
                membersPerGroup: config.maxMembersPerGroup,
                alarmsPerGroup: SharedAlarmRules.maxAlarmsPerGroup,
                personalAlarmsPerUser: PersonalAlarmRules.maxAlarmsPerUser,
                groupNameCharacters: GroupRules.maxNameCharacters,
                groupDescriptionCharacters: GroupRules.maxDescriptionCharacters,
                alarmTitleCharacters: SharedAlarmRules.maxTitleCharacters,
                alarmNoteCharacters: SharedAlarmRules.maxNoteCharacters,
                completionNoteCharacters: SharedAlarmRules.maxCompletionNoteCharacters,
                answerLeadMinutes: .init(
                    min: SharedAlarmRules.answerLeadRange.lowerBound, max: SharedAlarmRules.answerLeadRange.upperBound,
                    default: SharedAlarmRules.defaultAnswerLeadMinutes),
                attachmentMaxBytes: attachments.maxFileBytes,
                attachmentsPerAlarm: attachments.maxPerAlarm,
                attachmentQuotaUserBytes: attachments.userQuotaBytes,
                attachmentQuotaGroupBytes: attachments.groupQuotaBytes,
                uploadsPerMinute: attachments.uploadsPerMinute,
                writesPerMinute: config.writeBudget.writesPerMinute,
                writeBurst: config.writeBudget.burst,
                writeBytesPerHour: config.writeBudget.bytesPerHour,
                idempotencyKeyCharacters: IdempotencyKey.maxLength,
                idempotencyKeyHours: Int(IdempotencyStore.lifetimeHours)),
            features: apps.features,
            push: .init(
                webPush: services.vapidPublicKey != nil, apns: config.notifications.apns != nil,
                fcm: config.notifications.fcmServiceAccountFile != nil, vapidPublicKey: services.vapidPublicKey),
            signInProviders: signIn,
            minAppVersion: Dictionary(
                uniqueKeysWithValues: ClientPlatform.allCases.map { ($0.rawValue, apps.minAppVersion[$0]?.description) }))
    }
}

/// The `GET /v1/config` document (docs/apps.md#get-v1config).
struct ConfigDocument: Encodable {
    var limits: Limits
    var features: [String: Bool]
    var push: Push
    var signInProviders: [String]
    /// Per platform (`ios`, `android`, `web`): the oldest version served, or null for none.
    var minAppVersion: [String: String?]

    enum CodingKeys: String, CodingKey {
        case limits, features, push, signInProviders = "sign_in_providers", minAppVersion = "min_app_version"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(limits, forKey: .limits)
        try c.encode(features, forKey: .features)
        try c.encode(push, forKey: .push)
        try c.encode(signInProviders, forKey: .signInProviders)
        var versions = c.nestedContainer(keyedBy: AnyKey.self, forKey: .minAppVersion)
        for (platform, version) in minAppVersion {
            // null, not an absent key, for a platform without a minimum.
            if let version {
                try versions.encode(version, forKey: AnyKey(platform))
            } else {
                try versions.encodeNil(forKey: AnyKey(platform))
            }
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    struct Limits: Encodable {
        var membersPerGroup: Int
        var alarmsPerGroup: Int
        var personalAlarmsPerUser: Int
        var groupNameCharacters: Int
        var groupDescriptionCharacters: Int
        var alarmTitleCharacters: Int
        var alarmNoteCharacters: Int
        var completionNoteCharacters: Int
        var answerLeadMinutes: Range
        var attachmentMaxBytes: Int
        var attachmentsPerAlarm: Int
        var attachmentQuotaUserBytes: Int64
        var attachmentQuotaGroupBytes: Int64
        var uploadsPerMinute: Int
        var writesPerMinute: Int
        var writeBurst: Int
        var writeBytesPerHour: Int64
        var idempotencyKeyCharacters: Int
        var idempotencyKeyHours: Int

        struct Range: Encodable {
            var min: Int
            var max: Int
            var `default`: Int
        }

        enum CodingKeys: String, CodingKey {
            case membersPerGroup = "members_per_group", alarmsPerGroup = "alarms_per_group"
            case personalAlarmsPerUser = "personal_alarms_per_user", groupNameCharacters = "group_name_characters"
            case groupDescriptionCharacters = "group_description_characters", alarmTitleCharacters = "alarm_title_characters"
            case alarmNoteCharacters = "alarm_note_characters", completionNoteCharacters = "completion_note_characters"
            case answerLeadMinutes = "answer_lead_minutes", attachmentMaxBytes = "attachment_max_bytes"
            case attachmentsPerAlarm = "attachments_per_alarm", attachmentQuotaUserBytes = "attachment_quota_user_bytes"
            case attachmentQuotaGroupBytes = "attachment_quota_group_bytes", uploadsPerMinute = "uploads_per_minute"
            case writesPerMinute = "writes_per_minute", writeBurst = "write_burst", writeBytesPerHour = "write_bytes_per_hour"
            case idempotencyKeyCharacters = "idempotency_key_characters", idempotencyKeyHours = "idempotency_key_hours"
        }
    }

    struct Push: Encodable {
        var webPush: Bool
        var apns: Bool
        var fcm: Bool
        /// The VAPID public key for `PushManager.subscribe` (base64url), or null (not absent) without Web Push.
        @ExplicitNull var vapidPublicKey: String?

        enum CodingKeys: String, CodingKey {
            case webPush = "web_push", apns, fcm, vapidPublicKey = "vapid_public_key"
        }
    }
}
