import Foundation
import Hashing
import Push
import Testing

@Suite("RFC 8292 VAPID")
struct VAPIDTests {
    static let now: Int64 = 1_764_079_200  // 2025-11-25T14:00:00Z

    @Test func headerCarriesTokenAndKey() throws {
        let key = P256.PrivateKey()
        let endpoint = try PushEndpoint("https://Push.Example.net:8443/wpush/v2/abc?x=1")
        let header = try VAPID.authorization(for: endpoint, subject: "mailto:ops@chronir.example", key: key, now: Self.now)
        #expect(header.hasPrefix("vapid t="))
        let fields = header.dropFirst("vapid ".count).split(separator: ", ")
        #expect(fields.count == 2 && fields[0].hasPrefix("t=") && fields[1].hasPrefix("k="))
        let token = String(fields[0].dropFirst(2))
        #expect(Base64URL.decode(String(fields[1].dropFirst(2))) == key.publicKey.x963Representation)
        #expect(JWT.hasValidES256Signature(token, publicKey: key.publicKey))
        let parts = token.split(separator: ".")
        #expect(try jsonObject(parts[0]) as NSDictionary == ["typ": "JWT", "alg": "ES256"] as NSDictionary)
        let claims = try jsonObject(parts[1])
        #expect(claims["aud"] as? String == "https://push.example.net:8443")
        #expect(claims["exp"] as? Int == Int(Self.now + VAPID.defaultValiditySeconds))
        #expect(claims["sub"] as? String == "mailto:ops@chronir.example")
        #expect(claims.count == 3)
    }

    @Test func validityIsAtMost24Hours() throws {
        let key = P256.PrivateKey()
        let endpoint = try PushEndpoint("https://push.example.net/a")
        let longest = try VAPID.authorization(
            for: endpoint, subject: "https://chronir.example/contact", key: key, now: Self.now, validitySeconds: 86_400)
        let token = longest.split(separator: " ")[1].dropFirst(2).dropLast()
        #expect(try jsonObject(token.split(separator: ".")[1])["exp"] as? Int == Int(Self.now + 86_400))
        for validity: Int64 in [86_401, 0, -1] {
            #expect(throws: VAPIDError.invalidValidity) {
                try VAPID.authorization(for: endpoint, subject: "mailto:a@b", key: key, now: Self.now, validitySeconds: validity)
            }
        }
        #expect(throws: VAPIDError.invalidValidity) { try VAPID.authorization(for: endpoint, subject: "mailto:a@b", key: key, now: .max) }
    }

    @Test func subjectLengthLimit() throws {
        let endpoint = try PushEndpoint("https://push.example.net/a")
        let longest = "mailto:" + String(repeating: "a", count: 1_007) + "@b.example"
        #expect(longest.utf8.count == VAPID.maxSubjectByteCount)
        #expect(throws: Never.self) { try VAPID.authorization(for: endpoint, subject: longest, key: P256.PrivateKey(), now: Self.now) }
        #expect(throws: VAPIDError.invalidSubject) {
            let oneOver = "mailto:a" + longest.dropFirst("mailto:".count)
            _ = try VAPID.authorization(for: endpoint, subject: oneOver, key: P256.PrivateKey(), now: Self.now)
        }
    }

    @Test(arguments: [
        "", "ops@chronir.example", "mailto:", "mailto:ops", "mailto:@chronir.example", "mailto:ops@", "http://chronir.example",
        "https://", "mailto:ops @chronir.example", "mailto:ö@chronir.example",
        "mailto:" + String(repeating: "a", count: 1_010) + "@b.example",
    ])
    func badSubjectsAreThrown(_ subject: String) throws {
        let endpoint = try PushEndpoint("https://push.example.net/a")
        #expect(throws: VAPIDError.invalidSubject) {
            try VAPID.authorization(for: endpoint, subject: subject, key: P256.PrivateKey(), now: Self.now)
        }
    }
}
