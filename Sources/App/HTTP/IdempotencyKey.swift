import Domain
import Foundation
import Hashing
import Store
import Synchronization
import Wire

/// `Idempotency-Key` on signed-in POSTs (docs/apps.md#retries-idempotency-key; the header of the IETF
/// draft draft-ietf-httpapi-idempotency-key-header). The same key from the same account within 24 hours
/// (`IdempotencyStore.lifetimeMilliseconds`) gets the first answer again without the write being done
/// again, on every instance: the key is claimed in the transaction of the request's first write
/// (`ClaimingDatabase`), so the write and the claim commit together or not at all, and the answer is
/// stored right after the handler returns.
enum IdempotencyKey {
    /// Longest key accepted: a UUID is 36 characters; 255 leaves any client's scheme room and bounds
    /// what one row stores. Longer, empty, or with characters outside visible ASCII → 400 INVALID_REQUEST.
    static let maxLength = 255
    /// How long a claim without a stored answer counts as its request still running: a retry inside it
    /// gets 409 IDEMPOTENCY_KEY_IN_USE with `Retry-After: 1`. No write the server makes takes this long; a
    /// claim older than it lost its answer (the process stopped between the commit and storing it).
    static let inFlightMilliseconds: Int64 = 60_000
    /// The response field that marks a replayed answer.
    static let replayedHeader = "Idempotent-Replayed"

    /// The key a request carries: nil without the header; 400 for an unusable value.
    static func key(of request: Request) throws(APIError) -> String? {
        guard let value = request.headers[first: "idempotency-key"] else { return nil }
        guard !value.isEmpty, value.utf8.count <= maxLength, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw APIError(
                .invalidRequest, "Idempotency-Key must be 1…\(maxLength) visible ASCII characters (a UUID is fine)",
                field: "Idempotency-Key")
        }
        return value
    }

    /// SHA-256 of what makes two requests the same request: method, target (path and query), and the
    /// body — the buffered bytes, or a streamed upload's file read in 64-KiB pieces.
    static func fingerprint(of request: Request) throws -> [UInt8] {
        let hasher = SHA256.Hasher()
        let head = Array("\(request.method.rawValue) \(request.http.head.target)\n".utf8)
        head.withUnsafeBytes { hasher.update($0) }
        if let file = request.http.bodyFile {
            guard let handle = FileHandle(forReadingAtPath: file.path) else {
                throw APIError(.internalError, "the upload could not be read")
            }
            defer { try? handle.close() }
            while let piece = try handle.read(upToCount: 65_536), !piece.isEmpty {
                piece.withUnsafeBytes { hasher.update($0) }
            }
        } else {
            request.http.body.withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finalize()
    }

    /// The claim the request's first write transaction carries (task-local: set around the handler).
    final class Claim: Sendable {
        let userID: String
        let key: String
        let fingerprint: [UInt8]
        /// The claim's time (`created_ms`): the request's arrival on the server clock.
        let now: Int64
        /// Set once the write that carried the claim committed.
        private let committed = Mutex(false)

        init(userID: String, key: String, fingerprint: [UInt8], now: Int64) {
            self.userID = userID
            self.key = key
            self.fingerprint = fingerprint
            self.now = now
        }

        var isCommitted: Bool { committed.withLock { $0 } }
        func markCommitted() { committed.withLock { $0 = true } }
    }

    /// Thrown inside a write when another request with the same key committed its claim first: the
    /// write's savepoint rolls back, and the request answers as a retry would.
    struct Taken: Error {}

    /// The request being served with a key; nil elsewhere (`ClaimingDatabase` reads it).
    @TaskLocal static var current: Claim?

    /// What a stored record means for a retry: the first answer again (`Idempotent-Replayed: true`),
    /// 422 for a different request, 409 while the first one runs or when its answer was lost.
    static func answer(for record: IdempotencyStore.Record, fingerprint: [UInt8], now: Int64) -> Result<HTTPResponse, APIError> {
        guard ConstantTime.equals(record.fingerprint, fingerprint) else {
            return .failure(
                APIError(
                    .idempotencyKeyReused,
                    "this Idempotency-Key was used in the last 24 hours for another request (method, path or body differ)",
                    field: "Idempotency-Key"))
        }
        guard let answer = record.answer else {
            if now - record.createdMilliseconds < inFlightMilliseconds {
                return .failure(
                    APIError(
                        .idempotencyKeyInUse, "the first request with this Idempotency-Key is still being processed",
                        retryAfterSeconds: 1))
            }
            return .failure(
                APIError(
                    .idempotencyKeyInUse,
                    "the first request with this Idempotency-Key was applied but its answer is not available: read the resource again"))
        }
        var headers: HTTPHeaders = [replayedHeader: "true"]
        if let contentType = answer.contentType { headers.add(name: "Content-Type", value: contentType) }
        return .success(HTTPResponse(status: status(answer.status), headers: headers, body: answer.body))
    }

    /// The answer to store for `response`: nil for one that is not stored — a file body, or a 5xx (a
    /// retry must not get "try again" back for 24 hours; the claim stays answerless instead).
    static func storable(_ response: HTTPResponse) -> IdempotencyStore.Answer? {
        guard response.bodyFile == nil, response.status.code < 500 else { return nil }
        return IdempotencyStore.Answer(
            status: response.status.code, contentType: response.headers[first: "content-type"], body: response.body)
    }

    /// The status with its reason phrase.
    static func status(_ code: Int) -> HTTPStatus {
        knownStatuses.first { $0.code == code } ?? HTTPStatus(code: code, reasonPhrase: "Status \(code)")
    }

    private static let knownStatuses: [HTTPStatus] = [
        .ok, .created, .accepted, .noContent, .badRequest, .unauthorized, .forbidden, .notFound, .conflict,
        .contentTooLarge, .unsupportedMediaType, .unprocessableContent, .upgradeRequired, .tooManyRequests,
    ]
}
