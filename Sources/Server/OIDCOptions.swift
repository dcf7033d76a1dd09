import App
import ArgumentParser
import Domain
import Foundation

/// `chronir-server`'s Sign in with Apple/Google flags (docs/configuration.md#sign-in-with-apple-and-google),
/// resolved with their `CHRONIR_*` environment variables into `OIDCConfig`. A provider is on when it
/// has client ids; its key-set URL and issuer default to the provider's own.
struct OIDCOptions: ParsableArguments {
    @Option(
        help: """
            Sign in with Apple: the client ids ID tokens must be issued to (bundle id, Services ID), comma-separated. \
            [env: CHRONIR_OIDC_APPLE_CLIENT_IDS] (default: off)
            """)
    var oidcAppleClientIds: String?

    @Option(help: "Apple's key-set URL (https). [env: CHRONIR_OIDC_APPLE_JWKS_URL] (default: \(OIDCConfig.appleJWKSURL))")
    var oidcAppleJwksUrl: String?

    @Option(help: "The iss Apple's tokens must carry (tests). [env: CHRONIR_OIDC_APPLE_ISSUER] (default: https://appleid.apple.com)")
    var oidcAppleIssuer: String?

    @Option(
        help: """
            Apple: the Services ID the web client's "Sign in with Apple" button uses, one of --oidc-apple-client-ids. \
            [env: CHRONIR_OIDC_APPLE_WEB_CLIENT_ID] (default: no button)
            """)
    var oidcAppleWebClientId: String?

    @Option(
        help: """
            Google: the OAuth client ids ID tokens must be issued to, comma-separated. [env: CHRONIR_OIDC_GOOGLE_CLIENT_IDS] \
            (default: off)
            """)
    var oidcGoogleClientIds: String?

    @Option(help: "Google's key-set URL (https). [env: CHRONIR_OIDC_GOOGLE_JWKS_URL] (default: \(OIDCConfig.googleJWKSURL))")
    var oidcGoogleJwksUrl: String?

    @Option(
        help: "The iss Google's tokens must carry (tests). [env: CHRONIR_OIDC_GOOGLE_ISSUER] (default: https://accounts.google.com)")
    var oidcGoogleIssuer: String?

    @Option(
        help: """
            Google: the web OAuth client id the web client's "Sign in with Google" button uses, one of \
            --oidc-google-client-ids. [env: CHRONIR_OIDC_GOOGLE_WEB_CLIENT_ID] (default: no button)
            """)
    var oidcGoogleWebClientId: String?

    /// The configuration these flags (or their variables) describe; a URL that is not https, or a
    /// URL or issuer for a provider without client ids, is a `ValidationError` naming the flag.
    func resolve(_ options: OptionValues) throws -> OIDCConfig {
        var config = OIDCConfig()
        config.apple = try provider(
            .apple, options, clientIDs: oidcAppleClientIds, jwksURL: oidcAppleJwksUrl, issuer: oidcAppleIssuer,
            webClientID: oidcAppleWebClientId)
        config.google = try provider(
            .google, options, clientIDs: oidcGoogleClientIds, jwksURL: oidcGoogleJwksUrl, issuer: oidcGoogleIssuer,
            webClientID: oidcGoogleWebClientId)
        return config
    }

    private func provider(
        _ provider: SignInProvider, _ options: OptionValues, clientIDs: String?, jwksURL: String?, issuer: String?,
        webClientID: String?
    ) throws -> OIDCConfig.Provider? {
        let name = provider.rawValue.uppercased()
        let flag = "--oidc-\(provider.rawValue)"
        let ids = (options.value(clientIDs, "OIDC_\(name)_CLIENT_IDS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let url = options.value(jwksURL, "OIDC_\(name)_JWKS_URL")
        let iss = options.value(issuer, "OIDC_\(name)_ISSUER")
        let web = options.value(webClientID, "OIDC_\(name)_WEB_CLIENT_ID")?.trimmingCharacters(in: .whitespaces)
        guard !ids.isEmpty else {
            if url != nil || iss != nil || web != nil {
                throw ValidationError("\(flag)-jwks-url, \(flag)-issuer and \(flag)-web-client-id need \(flag)-client-ids")
            }
            return nil
        }
        if let url, !url.lowercased().hasPrefix("https://") { throw ValidationError("\(flag)-jwks-url must be an https URL") }
        if let web, !ids.contains(web) { throw ValidationError("\(flag)-web-client-id must be one of \(flag)-client-ids") }
        return OIDCConfig.Provider(
            clientIDs: ids, jwksURL: url ?? OIDCConfig.defaultJWKSURL(provider), issuer: iss, webClientID: web)
    }
}
