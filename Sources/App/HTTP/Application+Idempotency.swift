import Domain
import Logging
import Storage
import Store
import Wire

extension Application {
    /// A signed-in POST with an `Idempotency-Key` (`IdempotencyKey`): a live record of the key answers
    /// at once (replay, 422, 409); else the handler runs with the claim task-local, and once its write
    /// committed the claim, the answer is stored for the retries. Without a signed-in account the key
    /// is ignored (the handler answers 401, or registers/signs in, which is not keyed).
    func respondOnce(_ request: Request, _ handler: @Sendable (Request) async throws -> HTTPResponse) async -> HTTPResponse {
        do {
            guard let key = try IdempotencyKey.key(of: request), let userID = try await services.accountID(of: request) else {
                return try await handler(request)
            }
            let fingerprint =
                request.http.bodyFile == nil
                ? try IdempotencyKey.fingerprint(of: request)
                : try await services.workers.run { try IdempotencyKey.fingerprint(of: request) }
            let now = services.clock.nowMilliseconds()
            if let earlier = try await earlierAnswer(userID: userID, key: key, fingerprint: fingerprint, now: now) {
                return earlier
            }
            let claim = IdempotencyKey.Claim(userID: userID, key: key, fingerprint: fingerprint, now: now)
            var response: HTTPResponse
            do {
                response = try await IdempotencyKey.$current.withValue(claim) { try await handler(request) }
            } catch is IdempotencyKey.Taken {
                // A request with the same key committed between the look-up and this write: ours rolled back.
                return try await earlierAnswer(userID: userID, key: key, fingerprint: fingerprint, now: now)
                    ?? failure(APIError(.idempotencyKeyInUse, "a request with this Idempotency-Key is being processed"), request)
            } catch {
                response = failure(error, request)
            }
            if claim.isCommitted, let answer = IdempotencyKey.storable(response) {
                do {
                    try await services.database.write { db in
                        try IdempotencyStore.store(answer, userID: userID, key: key, claimedAt: now, on: db)
                    }
                } catch {
                    // The write itself committed: the client gets its answer now; a retry gets 409.
                    services.logger.warning(
                        "idempotency answer not stored", metadata: ["request_id": "\(request.requestID)", "error": "\(error)"])
                }
            }
            return response
        } catch {
            return failure(error, request)
        }
    }

    /// What a live record of the key answers, or nil when there is none.
    private func earlierAnswer(userID: String, key: String, fingerprint: [UInt8], now: Int64) async throws -> HTTPResponse? {
        let record = try await services.database.read { db in
            try IdempotencyStore.record(userID: userID, key: key, at: now, on: db)
        }
        guard let record else { return nil }
        switch IdempotencyKey.answer(for: record, fingerprint: fingerprint, now: now) {
        case .success(let response): return response
        case .failure(let error): throw error
        }
    }
}
