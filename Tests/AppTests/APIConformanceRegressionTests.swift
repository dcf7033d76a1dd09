import Foundation
import Testing
import Wire

@testable import App

/// Server bugs `.ci/schemathesis.sh` found against `Public/openapi.yaml`, each pinned here.
@Suite("API conformance — regressions found by schemathesis", .serialized)
struct APIConformanceRegressionTests {
    /// `cursor=` is a string the document allows; it was 422 "cursor is invalid". An empty cursor
    /// (a client with no page yet) now means the first page on every list endpoint.
    @Test("an empty cursor is the first page on every list")
    func emptyCursor() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        for path in [
            "/v1/groups", "/v1/invitations", "\(g)/invitations", "\(g)/alarms", "\(g)/completions",
        ] {
            let first = try await f.h.expect(200, .get, path, token: f.owner.token)
            let empty = try await f.h.expect(200, .get, "\(path)?cursor=", token: f.owner.token)
            #expect(empty.text == first.text, "\(path)")
            try await f.h.expect(200, .get, "\(path)?limit=1&cursor=", token: f.owner.token)
        }
        #expect(await f.h.send(.get, "/v1/groups?cursor=x", token: f.owner.token).status == 422)
    }
}
