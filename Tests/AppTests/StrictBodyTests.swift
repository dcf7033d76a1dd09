import Testing
import Wire

/// Every `StrictBody` endpoint refuses a field it does not know, before anything else in the body is
/// looked at and before anything is written: 422 naming the field.
@Suite("Strict bodies — an unknown field is 422 naming it, on every strict endpoint", .serialized)
struct StrictBodyTests {
    @Test("groups, members, transfer, join, invitations, alarms: `extra` is refused")
    func unknownField() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        let unknownAlarm = "00000000-0000-4000-8000-000000000000"
        let cases: [(HTTPMethod, String, String, String)] = [
            (.post, "/v1/groups", #"{"name":"G","extra":1}"#, f.owner.token),
            (.patch, g, #"{"name":"G2","extra":1}"#, f.owner.token),
            (.patch, "\(g)/members/\(f.member.id)", #"{"role":"admin","extra":1}"#, f.owner.token),
            (.post, "\(g)/transfer", #"{"user_id":"\#(f.admin.id)","extra":1}"#, f.owner.token),
            (.post, "/v1/join", #"{"code":"\#(f.code)","extra":1}"#, f.outsider.token),
            (.post, "\(g)/invitations", #"{"role":"member","extra":1}"#, f.owner.token),
            (.post, "\(g)/alarms", #"{"title":"x","extra":1}"#, f.owner.token),
            (.patch, "\(g)/alarms/\(unknownAlarm)", #"{"extra":1}"#, f.owner.token),
        ]
        let before = try await f.h.expect(200, .get, g, token: f.owner.token).text
        for (method, path, body, token) in cases {
            let reply = await f.h.send(method, path, json: body, token: token)
            #expect(reply.status == 422, "\(path) \(reply.text)")
            #expect(reply.errorField == "extra", "\(path) \(reply.text)")
            #expect(reply.text.contains("extra is invalid: unknown field"), "\(path) \(reply.text)")
        }
        #expect(try await f.h.expect(200, .get, g, token: f.owner.token).text == before)
    }
}
