public import Wire

/// An API error code: the stable `code`/`name` pair of the error envelope and its HTTP status.
/// CA001–CA015 are the product's (docs/design.md#error-codes); CA016 onwards are this server's. docs/api.md#errors lists them all.
public struct ErrorCode: Hashable, Sendable {
    public var code: String
    public var name: String
    public var status: HTTPStatus

    public static let alarmLimitReached = ErrorCode(code: "CA001", name: "ALARM_LIMIT_REACHED", status: .forbidden)
    public static let tierRequired = ErrorCode(code: "CA002", name: "TIER_REQUIRED", status: .forbidden)
    public static let groupMemberLimit = ErrorCode(code: "CA003", name: "GROUP_MEMBER_LIMIT", status: .conflict)
    public static let invitationExpired = ErrorCode(code: "CA004", name: "INVITATION_EXPIRED", status: .conflict)
    public static let invitationAlreadyAccepted = ErrorCode(
        code: "CA005", name: "INVITATION_ALREADY_ACCEPTED", status: .conflict)
    public static let alarmNotFound = ErrorCode(code: "CA006", name: "ALARM_NOT_FOUND", status: .notFound)
    public static let permissionDenied = ErrorCode(code: "CA007", name: "PERMISSION_DENIED", status: .forbidden)
    public static let scheduleInvalid = ErrorCode(
        code: "CA008", name: "SCHEDULE_INVALID", status: .unprocessableContent)
    public static let photoTooLarge = ErrorCode(code: "CA009", name: "PHOTO_TOO_LARGE", status: .contentTooLarge)
    public static let syncConflict = ErrorCode(code: "CA010", name: "SYNC_CONFLICT", status: .conflict)
    // CA011 NETWORK_UNAVAILABLE, CA014 OS_ALARM_PERMISSION_DENIED and CA015 NOTIFICATION_PERMISSION_DENIED
    // are client-side conditions (docs/design.md#error-codes); the server never sends them but keeps the numbers reserved.
    public static let authRequired = ErrorCode(code: "CA012", name: "AUTH_REQUIRED", status: .unauthorized)
    public static let subscriptionExpired = ErrorCode(
        code: "CA013", name: "SUBSCRIPTION_EXPIRED", status: .forbidden)

    public static let invalidRequest = ErrorCode(code: "CA016", name: "INVALID_REQUEST", status: .badRequest)
    public static let validationFailed = ErrorCode(
        code: "CA017", name: "VALIDATION_FAILED", status: .unprocessableContent)
    public static let notFound = ErrorCode(code: "CA018", name: "NOT_FOUND", status: .notFound)
    public static let methodNotAllowed = ErrorCode(
        code: "CA019", name: "METHOD_NOT_ALLOWED", status: .methodNotAllowed)
    public static let rateLimited = ErrorCode(code: "CA020", name: "RATE_LIMITED", status: .tooManyRequests)
    public static let invalidCredentials = ErrorCode(
        code: "CA021", name: "INVALID_CREDENTIALS", status: .unauthorized)
    public static let emailTaken = ErrorCode(code: "CA022", name: "EMAIL_TAKEN", status: .conflict)
    public static let payloadTooLarge = ErrorCode(
        code: "CA023", name: "PAYLOAD_TOO_LARGE", status: .contentTooLarge)
    public static let accountSuspended = ErrorCode(code: "CA024", name: "ACCOUNT_SUSPENDED", status: .forbidden)
    public static let unsupportedMediaType = ErrorCode(
        code: "CA025", name: "UNSUPPORTED_MEDIA_TYPE", status: .unsupportedMediaType)
    public static let internalError = ErrorCode(
        code: "CA026", name: "INTERNAL_ERROR", status: .internalServerError)
    public static let serviceUnavailable = ErrorCode(
        code: "CA027", name: "SERVICE_UNAVAILABLE", status: .serviceUnavailable)
    public static let uriTooLong = ErrorCode(code: "CA028", name: "URI_TOO_LONG", status: .uriTooLong)
    public static let headersTooLarge = ErrorCode(
        code: "CA029", name: "HEADERS_TOO_LARGE", status: .requestHeaderFieldsTooLarge)
    public static let requestTimeout = ErrorCode(code: "CA030", name: "REQUEST_TIMEOUT", status: .requestTimeout)
    /// Every unusable invite code (unknown, expired, disabled, locked, older than the caller's
    /// departure) gets this one answer: 404, like anything else that names nothing the caller may join.
    public static let inviteCodeInvalid = ErrorCode(code: "CA031", name: "INVITE_CODE_INVALID", status: .notFound)
    public static let ownerMustTransfer = ErrorCode(code: "CA032", name: "OWNER_MUST_TRANSFER", status: .conflict)
    /// An answer for a shared-alarm occurrence that is closed or not the current one.
    public static let occurrenceClosed = ErrorCode(code: "CA033", name: "OCCURRENCE_CLOSED", status: .conflict)
    public static let groupFrozen = ErrorCode(code: "CA034", name: "GROUP_FROZEN", status: .conflict)
    /// A mailed token (verify-email, password reset) that is unknown, used or expired.
    public static let tokenInvalid = ErrorCode(code: "CA040", name: "TOKEN_INVALID", status: .badRequest)
    /// The action needs a verified email address.
    public static let emailNotVerified = ErrorCode(code: "CA041", name: "EMAIL_NOT_VERIFIED", status: .forbidden)
    /// A write authenticated by the web client's session cookie without `X-Chronir-CSRF: 1`, or from a
    /// foreign `Origin` (`SessionCookie`; CA042–CA045 are the web session's codes).
    public static let csrfCheckFailed = ErrorCode(code: "CA042", name: "CSRF_CHECK_FAILED", status: .forbidden)
    /// A request carrying the session cookie more than once (one may be planted by a sibling subdomain:
    /// `SessionCookie.token(in:secure:)`), refused rather than guessing which one the browser meant.
    public static let sessionCookieAmbiguous = ErrorCode(
        code: "CA043", name: "SESSION_COOKIE_AMBIGUOUS", status: .badRequest)
    /// An answer to a shared-alarm occurrence before its `answerable_from` (lead window or pause; CA050–CA054
    /// are the shared-alarm controls').
    public static let answerTooEarly = ErrorCode(code: "CA050", name: "ANSWER_TOO_EARLY", status: .conflict)
    /// Taking an answer back after its withdrawal window, or once its occurrence has moved on
    /// (docs/design.md#answers-retries-and-undo).
    public static let answerWithdrawalClosed = ErrorCode(
        code: "CA051", name: "ANSWER_WITHDRAWAL_CLOSED", status: .conflict)
    /// A former member joining with a live code made before they were removed or left: they need a new
    /// code or invitation (the code itself is fine, so not INVITE_CODE_INVALID).
    public static let rejoinNeedsNewInvite = ErrorCode(
        code: "CA052", name: "REJOIN_NEEDS_NEW_INVITE", status: .forbidden)

    /// `POST /v1/auth/oidc` for a provider this server has no client ids for (docs/sign-in.md).
    public static let oidcProviderDisabled = ErrorCode(code: "CA055", name: "OIDC_PROVIDER_DISABLED", status: .notFound)
    /// An ID token that does not sign anyone in: signature, issuer, audience, expiry, nonce, or a
    /// nonce already used (docs/sign-in.md#verification).
    public static let idTokenInvalid = ErrorCode(code: "CA056", name: "ID_TOKEN_INVALID", status: .unauthorized)
    /// A new identity names an existing account's email, but one side is not verified (docs/sign-in.md#linking).
    public static let identityLinkRefused = ErrorCode(code: "CA057", name: "IDENTITY_LINK_REFUSED", status: .conflict)
    /// Removing the account's last way to sign in (no password, no other identity).
    public static let lastSignInMethod = ErrorCode(code: "CA058", name: "LAST_SIGN_IN_METHOD", status: .conflict)
    /// `POST /v1/me/password` on an account that has no password (Apple/Google only).
    public static let passwordNotSet = ErrorCode(code: "CA059", name: "PASSWORD_NOT_SET", status: .conflict)

    /// An attachment whose content is not JPEG, PNG, HEIC or PDF (an executable renamed `.jpg`), or
    /// whose declared `Content-Type` names another type than its content is.
    public static let attachmentTypeUnsupported = ErrorCode(
        code: "CA060", name: "ATTACHMENT_TYPE_UNSUPPORTED", status: .unsupportedMediaType)
    /// An attachment the decoder refused: truncated, damaged, or not what its first bytes claim.
    public static let attachmentCorrupt = ErrorCode(
        code: "CA061", name: "ATTACHMENT_CORRUPT", status: .unprocessableContent)
    /// An attachment that is also another format (a JPEG that is also a PDF or a ZIP, markup inside a PNG).
    public static let attachmentPolyglot = ErrorCode(
        code: "CA062", name: "ATTACHMENT_POLYGLOT", status: .unprocessableContent)
    /// An image (or PDF page) whose header claims more pixels than the limit: a decompression bomb.
    public static let imageTooLarge = ErrorCode(code: "CA063", name: "IMAGE_TOO_LARGE", status: .unprocessableContent)
    /// The alarm already has the most attachments allowed.
    public static let attachmentLimitReached = ErrorCode(
        code: "CA064", name: "ATTACHMENT_LIMIT_REACHED", status: .conflict)
    /// The upload would pass the uploader's or the group's byte quota (`AttachmentConfiguration.userQuotaBytes`,
    /// `groupQuotaBytes`): 409, a state the client changes by deleting attachments, not by sending less.
    public static let attachmentQuotaExceeded = ErrorCode(
        code: "CA065", name: "ATTACHMENT_QUOTA_EXCEEDED", status: .conflict)

    /// An `Idempotency-Key` the account used in the last 24 hours for a different request (method, path or
    /// body differ): 422, as draft-ietf-httpapi-idempotency-key-header says (docs/apps.md#retries-idempotency-key).
    public static let idempotencyKeyReused = ErrorCode(
        code: "CA066", name: "IDEMPOTENCY_KEY_REUSED", status: .unprocessableContent)
    /// The first request with this `Idempotency-Key` is still running (`Retry-After: 1`), or was applied
    /// and its answer lost (no `Retry-After`: read the resource again).
    public static let idempotencyKeyInUse = ErrorCode(code: "CA067", name: "IDEMPOTENCY_KEY_IN_USE", status: .conflict)
    /// `X-Chronir-Client` names an app version below its platform's `min_app_version` (`GET /v1/config`):
    /// every route but `GET /v1/config` and sign-out answers 426 until the app is updated (docs/apps.md#minimum-versions).
    public static let appUpdateRequired = ErrorCode(code: "CA068", name: "APP_UPDATE_REQUIRED", status: .upgradeRequired)
    /// `archived: true` on a shared alarm that is not done (docs/design.md#done-and-archived): 409 with the
    /// current alarm, whose `is_done` says why.
    public static let alarmNotDone = ErrorCode(code: "CA069", name: "ALARM_NOT_DONE", status: .conflict)
    // Subscriptions (docs/subscriptions.md#errors)
    /// Store signed data (or a store's answer) failed verification: the message names the reason
    /// (`untrusted_chain`, `bad_signature`, `wrong_bundle`, …); the tier is untouched.
    public static let purchaseInvalid = ErrorCode(code: "CA070", name: "PURCHASE_INVALID", status: .unprocessableContent)
    /// The purchase is bound to another account and `--purchase-transfer` is `refuse`.
    public static let purchaseOwnedElsewhere = ErrorCode(code: "CA071", name: "PURCHASE_OWNED_ELSEWHERE", status: .conflict)
    /// The transaction's `appAccountToken` names another account than the caller.
    public static let purchaseAccountMismatch = ErrorCode(code: "CA072", name: "PURCHASE_ACCOUNT_MISMATCH", status: .forbidden)
    /// A verified purchase of a product the catalogue does not list (`--products-file`).
    public static let productUnknown = ErrorCode(code: "CA073", name: "PRODUCT_UNKNOWN", status: .unprocessableContent)
    /// The store is not configured on this server (`--appstore-bundle-id`).
    public static let storeNotConfigured = ErrorCode(code: "CA074", name: "STORE_NOT_CONFIGURED", status: .notFound)
    /// Upgrading an anonymous account with Sign in with Apple/Google whose identity or email already
    /// has an account (docs/apps.md#anonymous-start).
    public static let accountExists = ErrorCode(code: "CA075", name: "ACCOUNT_EXISTS", status: .conflict)
    /// A Google Play purchase whose payment is still pending: it grants nothing until it completes.
    public static let purchasePending = ErrorCode(code: "CA078", name: "PURCHASE_PENDING", status: .unprocessableContent)

    /// Every code the server can send, in number order (the docs/api.md#errors table, tests).
    public static let all: [ErrorCode] = [
        .alarmLimitReached, .tierRequired, .groupMemberLimit, .invitationExpired, .invitationAlreadyAccepted,
        .alarmNotFound, .permissionDenied, .scheduleInvalid, .photoTooLarge, .syncConflict, .authRequired,
        .subscriptionExpired, .invalidRequest, .validationFailed, .notFound, .methodNotAllowed, .rateLimited,
        .invalidCredentials, .emailTaken, .payloadTooLarge, .accountSuspended, .unsupportedMediaType,
        .internalError, .serviceUnavailable, .uriTooLong, .headersTooLarge, .requestTimeout,
        .inviteCodeInvalid, .ownerMustTransfer, .occurrenceClosed, .groupFrozen,
        .tokenInvalid, .emailNotVerified, .csrfCheckFailed, .sessionCookieAmbiguous, .answerTooEarly,
        .answerWithdrawalClosed, .rejoinNeedsNewInvite, .oidcProviderDisabled, .idTokenInvalid, .identityLinkRefused,
        .lastSignInMethod, .passwordNotSet, .attachmentTypeUnsupported, .attachmentCorrupt, .attachmentPolyglot,
        .imageTooLarge, .attachmentLimitReached, .attachmentQuotaExceeded, .idempotencyKeyReused, .idempotencyKeyInUse,
        .appUpdateRequired, .alarmNotDone, .purchaseInvalid, .purchaseOwnedElsewhere, .purchaseAccountMismatch, .productUnknown,
        .storeNotConfigured, .accountExists, .purchasePending,
    ]
}
