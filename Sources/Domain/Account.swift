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
    public var tier: Tier
    public var status: UserStatus
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(
        id: String, email: String, displayName: String, timezone: String?, tier: Tier, status: UserStatus,
        version: Int64, createdAt: Timestamp, updatedAt: Timestamp, emailVerified: Bool = false
    ) {
        self.id = id
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
        case id, email, timezone, tier, status, version
        case displayName = "display_name"
        case emailVerified = "email_verified"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Documents written before migration 0015 have no `email_verified`: read as false.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        email = try c.decode(String.self, forKey: .email)
        emailVerified = try c.decodeIfPresent(Bool.self, forKey: .emailVerified) ?? false
        displayName = try c.decode(String.self, forKey: .displayName)
        _timezone = try c.decode(ExplicitNull<String>.self, forKey: .timezone)
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
    /// compatibility characters and mixed-script parts refused); then checks a plausible
    /// `local@domain` shape.
    public static func normalizeEmail(_ raw: String) throws(DomainError) -> String {
        let email = try EmailAddress.canonical(raw)
        guard !email.isEmpty else { throw .invalidField(field: "email", message: "email is required") }
        guard email.utf8.count <= maxEmailBytes else {
            throw .invalidField(field: "email", message: "email is longer than \(maxEmailBytes) bytes")
        }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
            !parts[1].hasSuffix("."),
            !email.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }),
            FreeText.firstViolation(in: email, .name) == nil
        else { throw .invalidField(field: "email", message: "email is not a valid address") }
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

    /// Accepts only zone identifiers the system's tz database knows (`America/New_York`, `UTC`).
    public static func validateTimezone(_ name: String) throws(DomainError) -> String {
        guard name.utf8.count <= maxTimezoneBytes, TimeZone(identifier: name) != nil, name.contains("/") || name == "UTC"
        else { throw .invalidField(field: "timezone", message: "timezone is not a known IANA zone") }
        return name
    }
}
