import Testing
import Transport
import Wire

@testable import App

/// The `--http-redirect-port` answer names the configured public host, whatever `Host` says.
@Suite("https redirect — the public base URL's host, never the request's Host")
struct HTTPSRedirectTests {
    func location(_ responder: HTTPSRedirectResponder, host: String?, target: String = "/v1/x?y=1") async -> (Int, String?) {
        var headers = HTTPHeaders()
        if let host { headers.add(name: "Host", value: host) }
        let request = HTTPRequest(head: HTTPRequestHead(method: .get, target: target, headers: headers), body: [])
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            responder.respond(
                to: request, context: RequestContext(remoteAddress: "127.0.0.1", connectionID: 1),
                sink: ResponseSink { continuation.resume(returning: $0) })
        }
        return (response.status.code, response.headers[first: "Location"])
    }

    @Test("a hostile Host is ignored: the Location is the configured host, path and query kept")
    func hostileHost() async {
        let responder = HTTPSRedirectResponder(publicBaseURL: "https://alarms.example.org", httpsPort: 8443)
        for host in ["evil.example", "alarms.example.org.evil.example:80", "[::1]", nil] {
            let (status, location) = await location(responder, host: host)
            #expect(status == 308)
            #expect(location == "https://alarms.example.org:8443/v1/x?y=1", "Host: \(host ?? "none")")
        }
        let (_, root) = await location(responder, host: "evil.example", target: "*")
        #expect(root == "https://alarms.example.org:8443/")
    }

    @Test("the port: an https base URL's own, else the TLS listener's, none for 443; IPv6 literals keep brackets")
    func ports() {
        #expect(HTTPSRedirectResponder.origin(publicBaseURL: "https://a.example:9443/app", httpsPort: 8443) == "https://a.example:9443")
        #expect(HTTPSRedirectResponder.origin(publicBaseURL: "http://a.example:8080", httpsPort: 443) == "https://a.example")
        #expect(HTTPSRedirectResponder.origin(publicBaseURL: "https://a.example", httpsPort: 443) == "https://a.example")
        #expect(HTTPSRedirectResponder.origin(publicBaseURL: "https://[2001:db8::1]", httpsPort: 8443) == "https://[2001:db8::1]:8443")
        #expect(HTTPSRedirectResponder.origin(publicBaseURL: "not a url", httpsPort: 443) == nil)
    }
}
