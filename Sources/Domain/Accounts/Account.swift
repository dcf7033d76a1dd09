import Foundation

/// Subscription tier (docs/design.md#tiers). Creating groups and invitations needs `premium`.
public enum Tier: String, Sendable, Codable, CaseIterable {
    case free, plus, premium
}

/// Account status. A suspended account cannot authenticate; its tokens are revoked.
public enum UserStatus: String, Sendable, Codable, CaseIterable {
    case active, suspended
}

/// A user account as the API and the change log show it (never the password hash).
public struct User: Sendable, Codable, Equatable {
    public var id: String
    public var email: String
    /// Whether `email` was proved to be the owner's (a verification link, or the admin CLI). Only a
    /// verified address may accept an email invitation (docs/mail.md#verified-email).
    public var emailVerified: Bool
    public var displayName: String
    @ExplicitNull public var timezone: String?
    /// The user's language and region, a BCP 47 tag (`en-US`, `pt-BR`, `zh-Hant-TW`); null: unset.
    @ExplicitNull public var locale: String?
    /// The profile photo: an https URL the user set (data-schema §4.1), or null.
    @ExplicitNull public var avatarURL: String?
    /// When a session of this account was last used, as the server saw it: refreshed with the
    /// session's touch, so at most hourly (`SessionStore.touchIntervalMilliseconds`). Not a version
    /// change: no change-log row, `version` and `updated_at` stay.
    @ExplicitNull public var lastSeenAt: Timestamp?
    public var tier: Tier
    public var status: UserStatus
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(
        id: String, email: String, displayName: String, timezone: String?, tier: Tier, status: UserStatus,
        version: Int64, createdAt: Timestamp, updatedAt: Timestamp, emailVerified: Bool = false, locale: String? = nil,
        avatarURL: String? = nil, lastSeenAt: Timestamp? = nil
    ) {
        self.id = id
        self.locale = locale
        self.avatarURL = avatarURL
        self.lastSeenAt = lastSeenAt
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.timezone = timezone
        self.tier = tier
        self.status = status
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, email, timezone, locale, tier, status, version
        case avatarURL = "avatar_url"
        case lastSeenAt = "last_seen_at"
        case displayName = "display_name"
        case emailVerified = "email_verified"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Documents written before migration 0015 have no `email_verified`: read as false; before 0019
    /// no `locale`, `avatar_url`, `last_seen_at`: read as null.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        email = try c.decode(String.self, forKey: .email)
        emailVerified = try c.decodeIfPresent(Bool.self, forKey: .emailVerified) ?? false
        displayName = try c.decode(String.self, forKey: .displayName)
        _timezone = try c.decode(ExplicitNull<String>.self, forKey: .timezone)
        _locale = try c.decode(ExplicitNull<String>.self, forKey: .locale)
        _avatarURL = try c.decode(ExplicitNull<String>.self, forKey: .avatarURL)
        _lastSeenAt = try c.decode(ExplicitNull<Timestamp>.self, forKey: .lastSeenAt)
        tier = try c.decode(Tier.self, forKey: .tier)
        status = try c.decode(UserStatus.self, forKey: .status)
        version = try c.decode(Int64.self, forKey: .version)
        createdAt = try c.decode(Timestamp.self, forKey: .createdAt)
        updatedAt = try c.decode(Timestamp.self, forKey: .updatedAt)
    }
}

/// Account field rules: normalisation and validation, as pure functions.
public enum AccountRules {
    /// Shortest accepted password, in bytes of UTF-8.
    public static let minPasswordBytes = 8
    /// Longest accepted password: bounds the work one login can cause.
    public static let maxPasswordBytes = 1024
    /// Longest accepted email (RFC 5321 path limit).
    public static let maxEmailBytes = 254
    /// Longest display name, in characters (docs/design.md#accounts: 100).
    public static let maxDisplayNameCharacters = 100
    /// Longest IANA zone name accepted (docs/design.md#accounts: 50).
    public static let maxTimezoneBytes = 50

    /// The canonical address (`EmailAddress`: trimmed, NFC, case-folded; invisible, bidi and
    /// compatibility characters and mixed-script parts refused); then checks the grammar the server
    /// stores and mails (`EmailAddress.hasMailableShape`: a dot-atom local part, a host-name domain).
    public static func normalizeEmail(_ raw: String) throws(DomainError) -> String {
        let email = try EmailAddress.canonical(raw)
        guard !email.isEmpty else { throw .invalidField(field: "email", message: "email is required") }
        guard email.utf8.count <= maxEmailBytes else {
            throw .invalidField(field: "email", message: "email is longer than \(maxEmailBytes) bytes")
        }
        guard EmailAddress.hasMailableShape(email), FreeText.firstViolation(in: email, .name) == nil else {
            throw .invalidField(field: "email", message: "email is not a valid address")
        }
        return email
    }

    /// Checks the password length bounds (bytes of UTF-8).
    public static func validatePassword(_ password: String) throws(DomainError) {
        let n = password.utf8.count
        guard n >= minPasswordBytes else {
            throw .invalidField(field: "password", message: "password must be at least \(minPasswordBytes) bytes")
        }
        guard n <= maxPasswordBytes else {
            throw .invalidField(field: "password", message: "password must be at most \(maxPasswordBytes) bytes")
        }
    }

    /// Normalises as a `FreeText` name (NFC, trimmed; no controls, bidi overrides or invisible
    /// characters) and checks 1…100 characters.
    public static func normalizeDisplayName(_ raw: String) throws(DomainError) -> String {
        let name = try FreeText.normalize(raw, .name, field: "display_name")
        guard !name.isEmpty else { throw .invalidField(field: "display_name", message: "display_name is required") }
        guard name.count <= maxDisplayNameCharacters else {
            throw .invalidField(
                field: "display_name", message: "display_name is longer than \(maxDisplayNameCharacters) characters")
        }
        return name
    }

    /// Longest `locale`: 35 bytes, the length RFC 5646 §4.4.1 asks implementations to support.
    public static let maxLocaleBytes = 35
    /// Longest `avatar_url`: 2,048 bytes (the push endpoints' bound; longer URLs break proxies).
    public static let maxAvatarURLBytes = 2048

    /// A BCP 47 language tag in the RFC 5646 §2.1 shape, as far as a server needs it: a 2–3 letter
    /// language (or the 4–8 letter registered forms), then subtags of 1–8 letters or digits separated
    /// by `-`, a script of 4 letters, a region of 2 letters or 3 digits, and so on. No `_` (the POSIX
    /// form `en_US` is refused), no empty subtag, at most `maxLocaleBytes`. Returned as given: tags
    /// are case-insensitive, and clients send the case they display. 422 naming `locale` otherwise.
    public static func validateLocale(_ tag: String) throws(DomainError) -> String {
        let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
        func isAlpha(_ c: Character) -> Bool { c.isASCII && c.isLetter }
        func isAlnum(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber) }
        guard tag.utf8.count <= maxLocaleBytes, let language = subtags.first,
            (2...8).contains(language.count), language.count != 4, language.allSatisfy(isAlpha),
            subtags.dropFirst().allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy(isAlnum) })
        else {
            throw .invalidField(
                field: "locale", message: "locale must be a BCP 47 language tag (e.g. en-US) of at most \(maxLocaleBytes) bytes")
        }
        return tag
    }

    /// An avatar's URL: `https://` with a host, no credentials, no spaces or control characters, at most
    /// `maxAvatarURLBytes`. A plain-http URL would show the photo to every network on the way and
    /// be refused as mixed content by the web client. 422 naming `avatar_url` otherwise.
    public static func validateAvatarURL(_ text: String) throws(DomainError) -> String {
        guard text.utf8.count <= maxAvatarURLBytes else {
            throw .invalidField(field: "avatar_url", message: "avatar_url is longer than \(maxAvatarURLBytes) bytes")
        }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
            let url = URLComponents(string: text), url.scheme?.lowercased() == "https",
            let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { throw .invalidField(field: "avatar_url", message: "avatar_url must be an https URL") }
        return text
    }

    /// Accepts only zone identifiers the system's tz database knows (`America/New_York`, `UTC`).
    public static func validateTimezone(_ name: String) throws(DomainError) -> String {
        guard name.utf8.count <= maxTimezoneBytes, TimeZone(identifier: name) != nil, name.contains("/") || name == "UTC"
        else { throw .invalidField(field: "timezone", message: "timezone is not a known IANA zone") }
        return name
    }
}
