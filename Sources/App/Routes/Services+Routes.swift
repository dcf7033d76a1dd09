import Domain
import Storage
import Store
import Transport
import Wire

/// What route handlers share: the opening of a `/v1/groups/{id}…` handler, a write to that group
/// with the session read inside it, and the tails once the request is checked (`now` read once, one
/// write transaction, the answer).
extension Services {
    /// The signed-in user's id (401 first, before anything else is looked at) and the group `{id}`
    /// the path names.
    func groupCaller(_ request: Request) async throws -> (userID: String, groupID: String) {
        let userID = try await authenticate(request).user.id
        return (userID, try request.parameter("id"))
    }

    /// A write by the signed-in user to the group `{id}` the path names, with the session read inside
    /// the write (`writeAsUser`): answers 401, 403 and 429 as `groupCaller` would, then `prepare`'s
    /// errors (the rest of the request, read and checked at `now`), then the write's. `write` gets
    /// `prepare`'s answer, the caller's id, the group's id and the same `now`. `kind`: `.concurrent`
    /// only for a write that locks the row it decides on first (docs/architecture.md#storage).
    func writeToGroup<Input: Sendable, T: Sendable>(
        _ request: Request, _ kind: TransactionKind = .immediate, prepare: (_ now: Int64) throws -> Input,
        write: @escaping @Sendable (_ input: Input, _ userID: String, _ groupID: String, _ now: Int64, any SQLConnection) throws -> T
    ) async throws -> T {
        try await writeAsUser(request, kind, prepare: { now in (groupID: try request.parameter("id"), input: try prepare(now)) }) {
            path, caller, now, db in
            try write(path.input, caller.userID, path.groupID, now, db)
        }
    }

    /// `writeToGroup` for a request that carries nothing but the path.
    func writeToGroup<T: Sendable>(
        _ request: Request, write: @escaping @Sendable (_ userID: String, _ groupID: String, _ now: Int64, any SQLConnection) throws -> T
    ) async throws -> T {
        try await writeToGroup(request, prepare: { _ in }) { _, userID, groupID, now, db in try write(userID, groupID, now, db) }
    }

    /// Runs `write` in one write transaction at `now` and answers 204 No Content.
    func writeNoContent(_ write: @escaping @Sendable (_ now: Int64, any SQLConnection) throws -> Void) async throws -> HTTPResponse {
        let now = clock.nowMilliseconds()
        try await database.write { db in try write(now, db) }
        return HTTPResponse(status: .noContent)
    }

    /// Runs `write` in one write transaction at `now` and answers with what it returns as JSON (`status`).
    func writeJSON<Answer: Encodable & Sendable>(
        status: HTTPStatus = .ok, _ write: @escaping @Sendable (_ now: Int64, any SQLConnection) throws -> Answer
    ) async throws -> HTTPResponse {
        let now = clock.nowMilliseconds()
        return JSONBody.response(try await database.write { db in try write(now, db) }, status: status)
    }
}

/// A session being opened for a request (register, login, Sign in with Apple/Google): the token
/// handed to the client once, its hash (all the store keeps), and the request's user agent and
/// address the session list shows. One place issues sessions, so every sign-in path stores and
/// answers alike.
struct SessionOpening: Sendable {
    let token: String
    let tokenHash: [UInt8]
    let userAgent: String?
    let clientIP: String
    let now: Int64
    /// The request asked for the session as a cookie (`X-Chronir-Session: cookie`, SessionCookie).
    let asCookie: Bool

    init(for request: Request, at now: Int64) {
        (token, tokenHash) = TokenHashing.generate()
        userAgent = request.headers[first: "user-agent"]
        clientIP = request.context.remoteAddress
        asCookie = SessionCookie.requested(by: request)
        self.now = now
    }

    /// Stores the session for `userID`, inside the caller's write transaction.
    func store(userID: String, on db: any SQLConnection) throws {
        _ = try SessionStore.create(tokenHash: tokenHash, userID: userID, userAgent: userAgent, clientIP: clientIP, at: now, on: db)
    }

    /// The answer that hands the session to the client: `{user, token, expires_at}`; asked for as a
    /// cookie, `{user, expires_at}` and the token in an `HttpOnly` `Set-Cookie` (`secureCookie`: with
    /// `Secure`), so no script on the page ever holds it.
    func response(user: User, status: HTTPStatus = .ok, secureCookie: Bool) -> HTTPResponse {
        let lifetime = SessionStore.idleLifetimeMilliseconds
        var response = JSONBody.response(
            AccountRoutes.SessionBody(
                user: user, token: asCookie ? nil : token, expiresAt: Timestamp(milliseconds: now + lifetime)),
            status: status)
        if asCookie {
            response.headers.add(
                name: "Set-Cookie", value: SessionCookie.setCookie(token: token, secure: secureCookie))
            response.headers.add(name: "Cache-Control", value: "no-store")
        }
        return response
    }
}

extension Services {
    /// 403 unless `user` has at least `needed`: `SUBSCRIPTION_EXPIRED` (CA013) when a lapsed entitlement
    /// gave it that tier, else `TIER_REQUIRED` (CA002) (docs/subscriptions.md#downgrade).
    func requireTier(_ user: User, _ needed: Tier, _ what: String) async throws {
        guard user.tier < needed else { return }
        let now = clock.nowMilliseconds()
        throw try await database.read { db in try EntitlementStore.tierError(userID: user.id, needed: needed, what: what, at: now, on: db) }
    }
}
