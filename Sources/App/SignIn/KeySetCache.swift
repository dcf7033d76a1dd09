import Foundation
public import Identity

/// When a provider's key set (JWKS) is fetched, sans-I/O: times in, decisions out; the fetching is
/// `KeySetSource`'s. A fetched set is used until the lifetime its `Cache-Control: max-age` gives,
/// bounded by the limits below; an ID token naming a `kid` the set lacks may trigger one fetch
/// more (the provider rotated its keys) — but no fetch of any kind starts within
/// `minFetchIntervalMilliseconds` of the previous one, so tokens with made-up `kid`s (or a provider
/// that is down) cannot make the server hammer the provider. A set past its lifetime is still used
/// while no fetch may start or when the fetch fails (the provider's keys rarely change; refusing
/// every sign-in during a provider outage would be worse).
public struct KeySetCache: Sendable {
    /// The cache's bounds.
    public enum Limits {
        /// Shortest lifetime given to a set, whatever `max-age` says (or without one): a provider
        /// answering `max-age=0` must not cost a fetch per sign-in.
        public static let minLifetimeMilliseconds: Int64 = 5 * 60_000
        /// Longest lifetime: a key the provider withdrew (compromised) stops working within a day
        /// even if `max-age` said a week. Google's own `max-age` is ~6 h, Apple sends none.
        public static let maxLifetimeMilliseconds: Int64 = 24 * 3_600_000
        /// Least time between two fetches of one provider's set (expiry, unknown `kid` or a retry
        /// after a failure alike).
        public static let minFetchIntervalMilliseconds: Int64 = 60_000
    }

    /// What to do for a sign-in.
    public enum Decision: Sendable {
        /// Verify with this set.
        case use(JWKS)
        /// Fetch the set first (then `fetched` or `fetchFailed`).
        case fetch
        /// No set is held and none may be fetched yet: answer 503.
        case unavailable
    }

    /// The set held, if any.
    public private(set) var keys: JWKS?
    /// Counts sets fetched: a caller that saw generation n and needs a newer set (unknown `kid`)
    /// takes one fetched meanwhile by another request instead of fetching again.
    public private(set) var generation = 0
    /// Until when `keys` is fresh (Unix ms).
    public private(set) var freshUntil: Int64 = .min
    /// When the last fetch started (Unix ms).
    public private(set) var lastFetchAt: Int64?

    public init() {}

    /// The decision for a sign-in at `now`.
    public func forSignIn(now: Int64) -> Decision {
        if let keys, now < freshUntil { return .use(keys) }
        if mayFetch(now: now) { return .fetch }
        if let keys { return .use(keys) }
        return .unavailable
    }

    /// Whether a fetch may start at `now` (none started within the interval).
    public func mayFetch(now: Int64) -> Bool {
        guard let lastFetchAt else { return true }
        return now >= lastFetchAt + Limits.minFetchIntervalMilliseconds
    }

    /// A fetch starts at `now`.
    public mutating func fetchStarted(now: Int64) { lastFetchAt = now }

    /// A fetch that started at `now` brought `keys`, with the response's `Cache-Control` value.
    public mutating func fetched(_ keys: JWKS, cacheControl: String?, now: Int64) {
        self.keys = keys
        generation += 1
        freshUntil = now + Self.lifetimeMilliseconds(cacheControl: cacheControl)
    }

    /// The lifetime a `Cache-Control` value gives (RFC 9111 §5.2.2.1 `max-age`), clamped to the
    /// limits; no `max-age` (or `no-cache`/`no-store`, or an unreadable one): the minimum.
    public static func lifetimeMilliseconds(cacheControl: String?) -> Int64 {
        var seconds: Int64?
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            switch parts.first {
            case "no-cache", "no-store": return Limits.minLifetimeMilliseconds
            case "max-age" where parts.count == 2:
                let digits = parts[1].hasPrefix("\"") && parts[1].hasSuffix("\"") ? String(parts[1].dropFirst().dropLast()) : parts[1]
                // Over ten digits is far beyond the maximum anyway (and Int64 must not overflow).
                guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { continue }
                seconds = digits.utf8.count > 10 ? Int64.max / 1000 : Int64(digits)
            default: continue
            }
        }
        guard let seconds else { return Limits.minLifetimeMilliseconds }
        return min(max(seconds * 1000, Limits.minLifetimeMilliseconds), Limits.maxLifetimeMilliseconds)
    }
}
