import Foundation
import Hashing
import Outbound

/// What the push senders share: reading a provider's `Retry-After`,
/// the collapse key made from an outbox key, and what a transport failure means for a delivery.
enum ProviderExchange {
    /// Longest collapse id APNs accepts (`apns-collapse-id`: 64 bytes); FCM's `collapse_key` gets
    /// the same.
    static let maxCollapseKeyBytes = 64

    /// A provider's `Retry-After` header as a delay from `now` (`RetryAfter`: both RFC 9110 forms;
    /// `RetryPolicy` caps it).
    static func retryAfterMilliseconds(_ headers: [HTTPField], now: Int64) -> Int64? {
        RetryAfter.milliseconds(headers.value(of: "retry-after"), now: now)
    }

    /// The outbox key itself when it fits 64 bytes, else the 64 hex digits of its SHA-256: stable
    /// across retries and instances, so the provider collapses duplicates of one notification.
    static func collapseKey(_ key: String) -> String {
        key.utf8.count <= maxCollapseKeyBytes ? key : Hex.encode(SHA256.hash(Array(key.utf8)))
    }

    /// How a timeout's retry reason ends (`SendOutcome.isTimeout` reads it).
    static let timeoutSuffix = ": timeout"

    /// A failed exchange as an outcome: the network or the peer may recover (retry); a refused
    /// destination or an invalid request never will (rejected).
    static func outcome(of error: OutboundError, provider: String) -> SendOutcome {
        switch error {
        case .timeout: .retry(reason: provider + timeoutSuffix, retryAfterMilliseconds: nil)
        case .connectFailed(let message): .retry(reason: "\(provider): connect failed: \(message)", retryAfterMilliseconds: nil)
        case .tls(let message): .retry(reason: "\(provider): TLS: \(message)", retryAfterMilliseconds: nil)
        case .tooManyQueued: .retry(reason: "\(provider): outbound queue full", retryAfterMilliseconds: nil)
        case .responseTooLarge(let limit): .retry(reason: "\(provider): response over \(limit) bytes", retryAfterMilliseconds: nil)
        case .cancelled, .closed: .retry(reason: "\(provider): client closed", retryAfterMilliseconds: nil)
        case .other(let code, let message): .retry(reason: "\(provider): curl \(code): \(message)", retryAfterMilliseconds: nil)
        case .mailRefused(let code, let message) where code < 500:
            .retry(reason: "\(provider): refused \(code): \(message)", retryAfterMilliseconds: nil)
        case .mailRefused(let code, let message): .rejected(reason: "\(provider): refused \(code): \(message)")
        case .destinationRefused(let refusal): .rejected(reason: "\(provider): destination refused: \(refusal)")
        case .invalidRequest(let message): .rejected(reason: "\(provider): invalid request: \(message)")
        }
    }

    /// The statuses APNs and FCM answer alike, after each sender has classified its own reasons (a
    /// gone device, an expired credential): 200 delivered; 429 and 5xx retried (after `Retry-After`
    /// when the provider sent one); anything else rejected — sending it again cannot succeed.
    static func outcome(ofStatus response: OutboundResponse, described: String, now: Int64) -> SendOutcome {
        switch response.status {
        case 200: .delivered
        case 429, 500...599: .retry(reason: described, retryAfterMilliseconds: retryAfterMilliseconds(response.headers, now: now))
        default: .rejected(reason: described)
        }
    }

    /// A JSON body's top-level object, or nil.
    static func jsonObject(_ body: [UInt8]) -> [String: Any]? {
        guard !body.isEmpty else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// JSON text of `object` with sorted keys (reproducible bytes for tests and logs).
    static func json(_ object: [String: Any]) -> [UInt8] {
        // Only strings, numbers, dictionaries and arrays are ever passed: serialisation cannot fail.
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }
}
