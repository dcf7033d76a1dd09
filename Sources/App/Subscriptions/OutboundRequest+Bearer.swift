import Outbound

extension OutboundRequest {
    /// A store API call (App Store Server API, Play Developer API) authorised by a bearer token:
    /// `Authorization: Bearer <token>`, plus `Content-Type: application/json` when there is a body.
    static func bearer(_ method: Method, _ url: String, token: String, body: [UInt8], timeout: Duration) -> OutboundRequest {
        var headers = [HTTPField(name: "authorization", value: "Bearer \(token)")]
        if !body.isEmpty { headers.append(HTTPField(name: "content-type", value: "application/json")) }
        return OutboundRequest(method: method, url: url, headers: headers, body: body, timeout: timeout)
    }
}
