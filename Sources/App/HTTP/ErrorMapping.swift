import Domain
import Foundation
import Media
import Storage
import Store
public import Wire

/// The one place that turns any error into an HTTP response with the JSON error envelope
/// `{"error":{"code","name","message","request_id",…}}`. Nothing internal reaches the peer:
/// unknown errors become 500 INTERNAL_ERROR and are logged with the request id.
public enum ErrorMapping {
    /// Maps a thrown error to its wire form.
    public static func apiError(for error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as DomainError:
            return apiError(for: error)
        case let error as MediaError:
            return apiError(for: error)
        case let error as AttachmentStoreError:
            switch error {
            case .limitReached(let limit):
                return APIError(.attachmentLimitReached, "an alarm or completion holds at most \(limit) attachments; delete one first")
            case .uploadRateLimited(let limit, let seconds):
                return APIError(.rateLimited, "at most \(limit) uploads a minute", retryAfterSeconds: seconds)
            case .quotaExceeded(let scope, let limit, let used, let incoming):
                let whose = scope == .user ? "your attachments" : "this group's attachments"
                return APIError(
                    .attachmentQuotaExceeded,
                    "\(incoming) more bytes would pass the quota of \(limit) bytes for \(whose) (\(used) in use); delete some first")
            }
        case _ where error.violatedRule == .groupFrozen:
            return APIError(.groupFrozen, "this group is frozen by an operator and is read-only")
        case is WorkerPool.Saturated:
            // A bounded pool is full (hashing, `--hashing-queue`; decodes, `AttachmentConfiguration.maxQueuedDecodes`):
            // refuse now, never wait longer.
            return APIError(
                .serviceUnavailable, "the server is busy; try again shortly",
                retryAfterSeconds: WorkerPool.Saturated.retryAfterSeconds)
        case let error as AttachmentFiles.Failure where [ENOSPC, EDQUOT, EROFS].contains(error.errno):
            // The attachment store's disk is full or read-only: like the database's, a condition to retry.
            return APIError(.serviceUnavailable, "storage is temporarily unavailable; try again", retryAfterSeconds: 5)
        case let error as any StorageFailure where error.isStorageUnavailable:
            return APIError(.serviceUnavailable, "storage is temporarily unavailable; try again", retryAfterSeconds: 5)
        default:
            return APIError(.internalError, "internal error")
        }
    }

    /// A transport-level refusal (the HTTP parser's) as an API error: the status stays exactly as the
    /// parser decided (413, 414, 431, 408, 501, 505, 417, 400; 500 and 503 — with `Retry-After` — when a
    /// streamed upload cannot be written) and the code names it. Every listener
    /// (the API's, the metrics port's) answers parser errors through this.
    public static func apiError(for error: HTTPParseError) -> APIError {
        if error == HTTPRequestParser.uploadBodyTooLarge {
            return APIError(.photoTooLarge, "the attachment is larger than this server accepts")
        }
        if error.status == .serviceUnavailable {  // a streamed upload's disk is full or read-only
            return APIError(.serviceUnavailable, error.reason, retryAfterSeconds: 5)
        }
        let code: ErrorCode =
            switch error.status.code {
            case 500: .internalError
            case 408: .requestTimeout
            case 413: .payloadTooLarge
            case 414: .uriTooLong
            case 431: .headersTooLarge
            default: .invalidRequest
            }
        var apiError = APIError(code, error.reason)
        apiError.code.status = error.status
        return apiError
    }

    /// An upload's content refusal (docs/attachments.md#what-is-refused).
    static func apiError(for error: MediaError) -> APIError {
        switch error {
        case .unsupportedType(let why):
            return APIError(.attachmentTypeUnsupported, why)
        case .typeMismatch(let declared, let actual):
            return APIError(.attachmentTypeUnsupported, "Content-Type says \(declared) but the content is \(actual)")
        case .corrupt(let why):
            return APIError(.attachmentCorrupt, why)
        case .polyglot(let why):
            return APIError(.attachmentPolyglot, "the file is refused: \(why)")
        case .tooManyPixels(let width, let height, let limit):
            return APIError(.imageTooLarge, "the image claims \(width) × \(height) pixels; at most \(limit) pixels are accepted")
        case .tooCostly(let why):
            return APIError(.imageTooLarge, why)
        }
    }

    static func apiError(for error: DomainError) -> APIError {
        switch error {
        case .invalidField(let field, let message):
            return APIError(.validationFailed, message, field: field)
        case .authenticationRequired:
            return APIError(.authRequired, "authentication required")
        case .invalidCredentials:
            return APIError(.invalidCredentials, "email or password is incorrect")
        case .accountSuspended:
            return APIError(.accountSuspended, "this account is suspended")
        case .permissionDenied(let what):
            return APIError(.permissionDenied, what)
        case .notFound(let what):
            return APIError(.notFound, "\(what) not found")
        case .emailTaken:
            return APIError(.emailTaken, "an account with this email already exists", field: "email")
        case .tokenInvalid:
            return APIError(.tokenInvalid, "this link is not valid: it may have been used already or have expired")
        case .emailNotVerified:
            return APIError(.emailNotVerified, "confirm your email address first (see POST /v1/me/email/verification)")
        case .versionConflict(let current):
            return APIError(.syncConflict, "the document changed; current version attached", current: current)
        case .rateLimited(let seconds):
            return APIError(.rateLimited, "too many attempts; retry later", retryAfterSeconds: seconds)
        case .tierRequired(let what):
            return APIError(.tierRequired, what)
        case .subscriptionExpired(let what):
            return APIError(.subscriptionExpired, what)
        case .invalidSchedule(let field, let message):
            return APIError(.scheduleInvalid, message, field: field)
        case .groupMemberLimit:
            return APIError(.groupMemberLimit, "the group has reached its member limit")
        case .inviteCodeInvalid:
            return APIError(.inviteCodeInvalid, "this invite code is not valid")
        case .invitationExpired:
            return APIError(.invitationExpired, "this invitation has expired")
        case .invitationAlreadyAccepted:
            return APIError(.invitationAlreadyAccepted, "this invitation has already been answered")
        case .ownerMustTransfer:
            return APIError(.ownerMustTransfer, "the owner must transfer ownership before leaving")
        case .alarmNotFound:
            return APIError(.alarmNotFound, "alarm not found")
        case .alarmLimitReached:
            return APIError(.alarmLimitReached, "the alarm limit is reached (per group for shared alarms, per account for personal ones)")
        case .alarmNotDone(let current):
            return APIError(
                .alarmNotDone, "only a done alarm can be archived (one that has finished for good); current alarm attached",
                current: current)
        case .occurrenceClosed(let current):
            return APIError(.occurrenceClosed, "that occurrence is closed; current alarm attached", current: current)
        case .answerTooEarly(let from, let current):
            return APIError(
                .answerTooEarly, "this occurrence can be answered from \(from.description); current alarm attached",
                current: current)
        case .rejoinNeedsNewInvite(let left):
            return APIError(
                .rejoinNeedsNewInvite,
                left
                    ? "you left this group after this code was made: ask an owner or admin for a new code or an invitation"
                    : "you were removed from this group after this code was made: only an owner or admin can let you "
                        + "back in, with a new code or an invitation")
        case .answerWithdrawalClosed(let reason):
            return APIError(.answerWithdrawalClosed, "this answer can no longer be taken back: \(reason)")
        case .identityLinkRefused(let reason):
            return APIError(.identityLinkRefused, reason)
        case .lastSignInMethod:
            return APIError(
                .lastSignInMethod, "this is the account's last way to sign in: set a password or link another identity first")
        case .passwordNotSet:
            return APIError(
                .passwordNotSet, "this account has no password to change: set one through password reset (POST /v1/auth/password-reset)")
        }
    }

    /// The response for `error`, stamped with `requestID`.
    public static func response(for error: any Error, requestID: String) -> HTTPResponse {
        response(for: apiError(for: error), requestID: requestID)
    }

    /// The response for an `APIError`.
    public static func response(for error: APIError, requestID: String) -> HTTPResponse {
        var body = #"{"error":{"code":"# + JSONString.quote(error.code.code)
        body += #","name":"# + JSONString.quote(error.code.name)
        body += #","message":"# + JSONString.quote(error.message)
        if let field = error.field { body += #","field":"# + JSONString.quote(field) }
        if let seconds = error.retryAfterSeconds { body += #","retry_after":"# + String(seconds) }
        if let current = error.current { body += #","current":"# + String(decoding: current, as: UTF8.self) }
        body += #","request_id":"# + JSONString.quote(requestID) + "}}"
        var headers = error.headers
        headers.add(name: "Content-Type", value: JSONText.contentType)
        if let seconds = error.retryAfterSeconds { headers.add(name: "Retry-After", value: String(seconds)) }
        return HTTPResponse(status: error.code.status, headers: headers, body: Array(body.utf8))
    }
}

/// Minimal JSON text helpers for hand-built bodies.
enum JSONText {
    static let contentType = "application/json; charset=utf-8"
}
