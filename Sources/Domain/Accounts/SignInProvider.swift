/// An OpenID Connect provider people sign in with (docs/sign-in.md): the `provider` of `POST
/// /v1/auth/oidc` and of an identity, and the `{provider}` of `DELETE /v1/me/identities/{provider}`.
public enum SignInProvider: String, Sendable, CaseIterable, Codable {
    /// Sign in with Apple (`https://appleid.apple.com`).
    case apple
    /// Google Sign-In (`https://accounts.google.com`).
    case google
}
