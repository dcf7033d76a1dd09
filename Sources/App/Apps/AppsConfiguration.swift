import Foundation

/// What the phone apps are told and held to (docs/apps.md): the minimum app version per platform,
/// operator feature flags, and the app identities the deep-link association files name. Read from the
/// JSON file `--app-config-file` names (`AppsConfigurationSource`, reloaded on SIGHUP); without one,
/// every field is empty: no minimum, no flags, no association files.
///
/// ```json
/// {
///   "min_app_version": {"ios": "1.4.0", "android": "1.4.0"},
///   "features": {"shared_alarms": true},
///   "ios_app_ids": ["ABCDE12345.com.example.chronir"],
///   "android_app": {"package": "com.example.chronir", "sha256_cert_fingerprints": ["AB:CD:…:EF"]}
/// }
/// ```
/// Every key is optional; an unknown key or a malformed value refuses the whole file.
public struct AppsConfiguration: Sendable, Equatable {
    /// The oldest app version allowed per platform; older clients get 426 APP_UPDATE_REQUIRED.
    public var minAppVersion: [ClientPlatform: AppVersion] = [:]
    /// Operator feature flags, passed to clients as they are (`GET /v1/config` `features`).
    public var features: [String: Bool] = [:]
    /// `TEAMID.bundle.id` of each iOS app that opens this server's links (apple-app-site-association).
    public var iosAppIDs: [String] = []
    /// The Android app that opens this server's links (assetlinks.json).
    public var androidApp: AndroidApp? = nil

    /// An Android app: its package name and the SHA-256 fingerprints of its signing certificates.
    public struct AndroidApp: Sendable, Equatable {
        public var package: String
        /// `AB:CD:…` (32 bytes, uppercase hex, colon-separated), as `keytool -list` prints them.
        public var sha256CertFingerprints: [String]
    }

    /// Most feature flags a file may set: flags are for a handful of switches, not a data store.
    public static let maxFeatures = 64
    /// Most iOS app ids and Android fingerprints a file may list.
    public static let maxAppIdentities = 16

    public init() {}

    /// A file that is not what the type describes: the reason names the key.
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// The file's shape, for JSONDecoder (booleans stay booleans, strings strings).
    private struct File: Decodable {
        var minAppVersion: [String: String?]?
        var features: [String: Bool]?
        var iosAppIDs: [String]?
        var androidApp: Android?

        struct Android: Decodable {
            var package: String
            var sha256CertFingerprints: [String]
            enum CodingKeys: String, CodingKey, CaseIterable {
                case package, sha256CertFingerprints = "sha256_cert_fingerprints"
            }
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case minAppVersion = "min_app_version", features, iosAppIDs = "ios_app_ids", androidApp = "android_app"
        }
    }

    /// Parses the file's bytes.
    public static func parse(_ bytes: [UInt8]) throws(Invalid) -> AppsConfiguration {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)), let root = object as? [String: Any] else {
            throw Invalid(description: "the app configuration must be a JSON object")
        }
        let known = Set(File.CodingKeys.allCases.map(\.rawValue))
        if let unknown = root.keys.sorted().first(where: { !known.contains($0) }) {
            throw Invalid(description: "unknown key \(unknown) (known: \(known.sorted().joined(separator: ", ")); docs/apps.md)")
        }
        if let app = root["android_app"] as? [String: Any],
            let unknown = app.keys.sorted().first(where: { !["package", "sha256_cert_fingerprints"].contains($0) })
        {
            throw Invalid(description: "unknown key android_app.\(unknown)")
        }
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: Data(bytes)) } catch {
            throw Invalid(description: "the app configuration does not have the documented shape: \(error)")
        }
        var config = AppsConfiguration()
        for (name, text) in file.minAppVersion ?? [:] {
            guard let platform = ClientPlatform(rawValue: name) else {
                throw Invalid(description: "min_app_version.\(name): the platforms are ios, android, web")
            }
            guard let text else { continue }
            guard let version = AppVersion(text) else {
                throw Invalid(description: "min_app_version.\(name) must be a version like \"1.4.2\" or null")
            }
            config.minAppVersion[platform] = version
        }
        let flags = file.features ?? [:]
        guard flags.count <= maxFeatures, flags.keys.allSatisfy(Self.isFeatureName) else {
            throw Invalid(description: "features: at most \(maxFeatures) booleans named [a-z][a-z0-9_]{0,63}")
        }
        config.features = flags
        let ids = file.iosAppIDs ?? []
        guard ids.count <= maxAppIdentities, ids.allSatisfy(Self.isAppleAppID) else {
            throw Invalid(description: "ios_app_ids: at most \(maxAppIdentities) ids like \"ABCDE12345.com.example.app\"")
        }
        config.iosAppIDs = ids
        if let app = file.androidApp {
            let prints = app.sha256CertFingerprints.map { $0.uppercased() }
            guard Self.isAndroidPackage(app.package) else {
                throw Invalid(description: "android_app.package must be a package name like com.example.app")
            }
            guard !prints.isEmpty, prints.count <= maxAppIdentities, prints.allSatisfy(Self.isFingerprint) else {
                throw Invalid(description: "android_app.sha256_cert_fingerprints: 1…\(maxAppIdentities) of 32 bytes as AB:CD:… each")
            }
            config.androidApp = AndroidApp(package: app.package, sha256CertFingerprints: prints)
        }
        return config
    }

    /// Whether a client that names itself `client` must update (its version is below its platform's minimum).
    public func updateRequired(_ client: ClientIdentity) -> AppVersion? {
        guard let minimum = minAppVersion[client.platform], client.version < minimum else { return nil }
        return minimum
    }

    static func isFeatureName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 64, first >= 0x61, first <= 0x7A else { return false }
        return bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
    }

    /// `TEAMID.bundle.id`: a 10-character team id of A–Z/0–9, a dot, a bundle id of letters, digits, `.` and `-`.
    static func isAppleAppID(_ id: String) -> Bool {
        let parts = id.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, parts[0].utf8.count == 10, parts[1].utf8.count <= 155 else { return false }
        return parts[0].utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }
            && parts[1].utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x2E || $0 == 0x2D }
    }

    /// A Java-style package: two or more dot-separated segments, each a letter then letters, digits or `_`.
    static func isAndroidPackage(_ name: String) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2, name.utf8.count <= 255 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.utf8.first, (first >= 0x41 && first <= 0x5A) || (first >= 0x61 && first <= 0x7A) else {
                return false
            }
            return segment.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x5F }
        }
    }

    /// `AB:CD:…`: 32 uppercase hex pairs joined by colons.
    static func isFingerprint(_ text: String) -> Bool {
        let pairs = text.split(separator: ":", omittingEmptySubsequences: false)
        return pairs.count == 32
            && pairs.allSatisfy { $0.utf8.count == 2 && $0.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) } }
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}

/// The platforms `X-Chronir-Client` names.
public enum ClientPlatform: String, Sendable, CaseIterable, Hashable {
    case ios, android, web
}

/// A dotted numeric app version, `1.4.2`: 1…4 components of at most 9 digits each. Compared
/// component by component, missing ones counting as 0 (`1.4` == `1.4.0`).
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let components: [Int]

    /// Most components accepted.
    public static let maxComponents = 4

    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...Self.maxComponents).contains(parts.count) else { return nil }
        var components: [Int] = []
        for part in parts {
            guard (1...9).contains(part.utf8.count), part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(part) else {
                return nil
            }
            components.append(n)
        }
        self.components = components
    }

    public static func < (a: AppVersion, b: AppVersion) -> Bool {
        for i in 0..<max(a.components.count, b.components.count) {
            let x = i < a.components.count ? a.components[i] : 0
            let y = i < b.components.count ? b.components[i] : 0
            if x != y { return x < y }
        }
        return false
    }

    public static func == (a: AppVersion, b: AppVersion) -> Bool { !(a < b) && !(b < a) }

    public func hash(into hasher: inout Hasher) {
        var trimmed = components
        while trimmed.count > 1, trimmed.last == 0 { trimmed.removeLast() }
        hasher.combine(trimmed)
    }

    public var description: String { components.map(String.init).joined(separator: ".") }
}

/// What `X-Chronir-Client: <platform>/<version>` says (`ios/1.4.2`; anything after a space is
/// ignored). A header that does not parse names no client: nothing is checked (web clients, scripts).
public struct ClientIdentity: Sendable, Equatable {
    public var platform: ClientPlatform
    public var version: AppVersion

    /// The request header's name.
    public static let headerName = "X-Chronir-Client"

    public init(platform: ClientPlatform, version: AppVersion) {
        self.platform = platform
        self.version = version
    }

    /// Parses a header value; nil when it is not `<platform>/<version>`.
    public init?(header: String) {
        let token = header.split(separator: " ", maxSplits: 1).first ?? ""
        let parts = token.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let platform = ClientPlatform(rawValue: parts[0].lowercased()), let version = AppVersion(parts[1])
        else { return nil }
        self.init(platform: platform, version: version)
    }
}
