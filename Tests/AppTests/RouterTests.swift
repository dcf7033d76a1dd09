import Domain
import Testing
import Wire

@testable import App

@Suite("Router — method + path templates")
struct RouterTests {
    func router() -> Router<String> {
        var r = Router<String>()
        r.add(.get, "/healthz", "health")
        r.add(.get, "/v1/groups", "list")
        r.add(.post, "/v1/groups", "create")
        r.add(.get, "/v1/groups/{id}", "show")
        r.add(.delete, "/v1/groups/{id}/members/{user_id}", "remove")
        return r
    }

    func matched(_ outcome: Router<String>.Outcome) -> Router<String>.Match? {
        if case .matched(let m) = outcome { return m }
        return nil
    }

    @Test("static and parameterised routes match with decoded parameters")
    func matches() {
        let r = router()
        #expect(matched(r.match(.get, path: "/healthz"))?.handler == "health")
        #expect(matched(r.match(.post, path: "/v1/groups"))?.handler == "create")
        let show = matched(r.match(.get, path: "/v1/groups/abc%20def"))
        #expect(show?.handler == "show")
        #expect(show?.parameters == ["id": "abc def"])
        #expect(show?.template == "/v1/groups/{id}")
        let remove = matched(r.match(.delete, path: "/v1/groups/g1/members/u2"))
        #expect(remove?.parameters == ["id": "g1", "user_id": "u2"])
    }

    @Test("HEAD falls back to GET")
    func headFallsBack() {
        #expect(matched(router().match(.head, path: "/healthz"))?.handler == "health")
    }

    @Test("a known path with another method is 405 with the Allow list")
    func methodNotAllowed() {
        guard case .methodNotAllowed(let allowed) = router().match(.put, path: "/v1/groups") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed.map(\.rawValue) == ["GET", "HEAD", "POST"])
        guard case .methodNotAllowed = router().match(.post, path: "/v1/groups/x") else {
            Issue.record("expected 405")
            return
        }
    }

    @Test("unknown paths are not found; bad escapes are bad paths")
    func notFound() {
        let r = router()
        guard case .notFound = r.match(.get, path: "/v1/nope") else {
            Issue.record("expected 404")
            return
        }
        guard case .notFound = r.match(.get, path: "/v1/groups/a/b") else {
            Issue.record("expected 404")
            return
        }
        guard case .badPath = r.match(.get, path: "/v1/groups/%zz") else {
            Issue.record("expected bad path")
            return
        }
    }

    @Test("routes lists every method and template")
    func listsRoutes() {
        #expect(
            router().routes.map { "\($0.method) \($0.template)" } == [
                "GET /healthz", "GET /v1/groups", "POST /v1/groups", "GET /v1/groups/{id}",
                "DELETE /v1/groups/{id}/members/{user_id}",
            ])
    }
}

@Suite("Error envelope — one mapping for every error")
struct ErrorEnvelopeTests {
    @Test("the envelope carries code, name, message, field and request id; statuses match")
    func envelope() throws {
        let response = ErrorMapping.response(
            for: APIError(.validationFailed, "email is \"bad\"", field: "email"), requestID: "r-1")
        #expect(response.status.code == 422)
        #expect(response.headers[first: "content-type"] == "application/json; charset=utf-8")
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"error":{"code":"CA017","name":"VALIDATION_FAILED","message":"email is \"bad\"","field":"email","request_id":"r-1"}}"#
        )
    }

    @Test("429 carries Retry-After; unknown errors are 500 without detail")
    func retryAndInternal() {
        struct Secret: Error { let token = "do-not-leak" }
        let limited = ErrorMapping.response(for: DomainErrorFixtures.rateLimited, requestID: "r")
        #expect(limited.status.code == 429)
        #expect(limited.headers[first: "retry-after"] == "42")
        let internalError = ErrorMapping.response(for: Secret(), requestID: "r")
        #expect(internalError.status.code == 500)
        #expect(!String(decoding: internalError.body, as: UTF8.self).contains("do-not-leak"))
    }

    @Test("domain errors map to their codes and statuses")
    func domainMapping() {
        let schedule = ErrorMapping.apiError(for: DomainError.invalidSchedule(field: "schedule.interval", message: "m"))
        #expect(schedule.code == .scheduleInvalid)
        #expect(schedule.code.status.code == 422)
        #expect(schedule.field == "schedule.interval")
        #expect(ErrorMapping.apiError(for: DomainError.versionConflict(current: [])).code == .syncConflict)
        #expect(ErrorMapping.apiError(for: DomainError.emailTaken).code.status.code == 409)
        #expect(ErrorMapping.apiError(for: DomainError.authenticationRequired).code == .authRequired)
    }

    @Test("codes are unique and CA001–CA015 keep the product's names")
    func codes() {
        #expect(Set(ErrorCode.all.map(\.code)).count == ErrorCode.all.count)
        #expect(ErrorCode.permissionDenied.code == "CA007")
        #expect(ErrorCode.syncConflict.code == "CA010")
        #expect(ErrorCode.authRequired.code == "CA012")
        #expect(ErrorCode.tierRequired.status.code == 403)
    }
}

enum DomainErrorFixtures {
    static let rateLimited = DomainError.rateLimited(retryAfterSeconds: 42)
}
