import Domain
import Wire

/// The association files that let the apps open this server's links (docs/apps.md#deep-links):
/// `GET /.well-known/apple-app-site-association` (iOS universal links, from `ios_app_ids`) and
/// `GET /.well-known/assetlinks.json` (Android App Links, from `android_app`), both `application/json`,
/// generated from the app configuration file at each request (so a SIGHUP applies); 404 when not configured.
enum DeepLinkRoutes {
    static let appleAssociationPath = "/.well-known/apple-app-site-association"
    static let androidAssetLinksPath = "/.well-known/assetlinks.json"
    /// The paths an app opens (App. B of the API seed): invitations, invite codes, a group, an alarm.
    static let appPaths = ["/invite/*", "/join/*", "/group/*", "/alarm/*"]
    /// Apple's CDN and Android's verifier fetch these rarely; an hour keeps a changed file from lingering.
    static let maxAgeSeconds = 3600

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, appleAssociationPath, .sync { _ in try appleAssociation(services.apps.current) })
        router.add(.get, androidAssetLinksPath, .sync { _ in try androidAssetLinks(services.apps.current) })
    }

    static func appleAssociation(_ apps: AppsConfiguration) throws -> HTTPResponse {
        guard !apps.iosAppIDs.isEmpty else { throw APIError(.notFound, "no iOS app is configured on this server") }
        let document = AppleAppSiteAssociation(
            applinks: .init(details: [.init(appIDs: apps.iosAppIDs, components: appPaths.map { ["/": $0] })]),
            webcredentials: .init(apps: apps.iosAppIDs))
        return response(DocumentCoding.encode(document))
    }

    static func androidAssetLinks(_ apps: AppsConfiguration) throws -> HTTPResponse {
        guard let app = apps.androidApp else { throw APIError(.notFound, "no Android app is configured on this server") }
        let statement = AssetLinkStatement(
            relation: ["delegate_permission/common.handle_all_urls"],
            target: .init(namespace: "android_app", packageName: app.package, sha256CertFingerprints: app.sha256CertFingerprints))
        return response(DocumentCoding.encode([statement]))
    }

    private static func response(_ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(
            status: .ok,
            headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=\(maxAgeSeconds)"], body: body)
    }

    /// Apple's format (iOS 13+: `appIDs` and `components`).
    struct AppleAppSiteAssociation: Encodable {
        var applinks: AppLinks
        var webcredentials: WebCredentials

        struct AppLinks: Encodable {
            var details: [Detail]
        }

        struct Detail: Encodable {
            var appIDs: [String]
            var components: [[String: String]]
        }

        struct WebCredentials: Encodable {
            var apps: [String]
        }
    }

    /// One Digital Asset Links statement.
    struct AssetLinkStatement: Encodable {
        var relation: [String]
        var target: Target

        struct Target: Encodable {
            var namespace: String
            var packageName: String
            var sha256CertFingerprints: [String]

            enum CodingKeys: String, CodingKey {
                case namespace, packageName = "package_name", sha256CertFingerprints = "sha256_cert_fingerprints"
            }
        }
    }
}
