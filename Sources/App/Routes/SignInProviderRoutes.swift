import Domain
import Wire

/// `GET /v1/auth/providers` (docs/sign-in.md#the-web-client): the Sign in with Apple/Google
/// providers this server accepts ID tokens from, each with the client id a web page starts the
/// provider's flow with when one is configured. No authentication: the sign-in page asks before
/// anyone is signed in. Client ids are public (they are in every provider sign-in URL), so nothing
/// here is secret.
enum SignInProviderRoutes {
    /// The answer: `{"providers": [{"provider": "apple", "web_client_id": "…"}]}`; empty when none is on.
    struct Listing: Encodable {
        var providers: [Entry]
    }

    /// One provider that is on; `webClientID` nil: apps may use it, the web client shows no button.
    struct Entry: Encodable {
        var provider: SignInProvider
        /// null, not absent: the schema names it.
        @ExplicitNull var webClientID: String?

        enum CodingKeys: String, CodingKey {
            case provider
            case webClientID = "web_client_id"
        }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/auth/providers", .sync { _ in JSONBody.response(listing(services.oidc?.config ?? OIDCConfiguration())) })
    }

    /// The providers `config` turns on, Apple first (the order of `SignInProvider.allCases`).
    static func listing(_ config: OIDCConfiguration) -> Listing {
        Listing(
            providers: SignInProvider.allCases.compactMap { provider in
                config.provider(provider).map { Entry(provider: provider, webClientID: $0.webClientID) }
            })
    }
}
