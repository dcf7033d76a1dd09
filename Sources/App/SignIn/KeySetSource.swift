import Domain
import Identity
import Logging
import Outbound

/// One provider's key set, fetched over HTTPS through `OutboundClient` and cached by `KeySetCache`'s
/// rules (docs/sign-in.md#key-sets). One fetch at a time: sign-ins that need a fetch while one runs
/// wait for it instead of starting their own.
actor KeySetSource {
    /// The deadline of one key-set fetch.
    static let fetchTimeout: Duration = .seconds(10)

    /// No key set could be had: none cached and the fetch failed or may not start yet.
    struct Unavailable: Error {}

    let provider: SignInProvider
    private let url: String
    private let client: OutboundClient
    private let clock: any WallClock
    private let logger: Logger
    private var cache = KeySetCache()
    private var pending: Task<Void, Never>?

    init(provider: SignInProvider, url: String, client: OutboundClient, clock: any WallClock, logger: Logger) {
        self.provider = provider
        self.url = url
        self.client = client
        self.clock = clock
        self.logger = logger
    }

    /// The key set to verify a sign-in with, and its generation (for `keys(newerThan:)`).
    func keys() async throws(Unavailable) -> (keys: JWKS, generation: Int) {
        switch cache.forSignIn(now: clock.nowMilliseconds()) {
        case .use(let keys):
            return (keys, cache.generation)
        case .unavailable:
            throw Unavailable()
        case .fetch:
            await fetch()
            guard let keys = cache.keys else { throw Unavailable() }
            return (keys, cache.generation)
        }
    }

    /// A set newer than `generation`, for a token whose `kid` that generation lacks: one fetched
    /// meanwhile, else a fetch now if `KeySetCache` allows one; nil when neither (the token is refused).
    func keys(newerThan generation: Int) async -> JWKS? {
        if cache.generation > generation { return cache.keys }
        if pending == nil {
            guard cache.mayFetch(now: clock.nowMilliseconds()) else { return nil }
        }
        await fetch()
        return cache.generation > generation ? cache.keys : nil
    }

    /// Runs one fetch, or waits for the one running.
    private func fetch() async {
        if let pending { return await pending.value }
        let now = clock.nowMilliseconds()
        cache.fetchStarted(now: now)
        let task = Task { await self.download(startedAt: now) }
        pending = task
        await task.value
        pending = nil
    }

    private func download(startedAt now: Int64) async {
        let request = OutboundRequest(
            url: url, headers: [HTTPField(name: "accept", value: "application/json")], timeout: Self.fetchTimeout)
        do {
            let response = try await client.send(request)
            guard response.status == 200 else {
                logger.warning(
                    "oidc: key set fetch refused", metadata: ["provider": "\(provider.rawValue)", "status": "\(response.status)"])
                return
            }
            let keys = try JWKS(json: response.body)
            let cacheControl = response.headers.value(of: "cache-control")
            cache.fetched(keys, cacheControl: cacheControl, now: now)
            logger.info(
                "oidc: key set fetched",
                metadata: ["provider": "\(provider.rawValue)", "keys": "\(keys.keys.count)", "cache_control": "\(cacheControl ?? "")"])
        } catch {
            logger.warning("oidc: key set fetch failed", metadata: ["provider": "\(provider.rawValue)", "error": "\(error)"])
        }
    }
}

extension KeySetSource {
    /// Runs `check` (a verifier's call) against the set at the clock's now; a `kid` the set lacks fetches
    /// it again once (`keys(newerThan:)`) and checks again. Sign-in and the Pub/Sub push check share it.
    nonisolated func verify(
        clock: any WallClock, _ check: @Sendable (JWKS, Int64) -> Result<VerifiedIdentity, IDTokenError>
    ) async -> Result<VerifiedIdentity, OIDCService.Refusal> {
        let held: (keys: JWKS, generation: Int)
        do {
            held = try await keys()
        } catch {
            return .failure(.keysUnavailable)
        }
        switch check(held.keys, clock.nowMilliseconds()) {
        case .success(let identity):
            return .success(identity)
        case .failure(.unknownKeyID(let kid)) where kid != nil:
            guard let newer = await keys(newerThan: held.generation) else { return .failure(.invalid(.unknownKeyID(kid))) }
            return check(newer, clock.nowMilliseconds()).mapError { .invalid($0) }
        case .failure(let error):
            return .failure(.invalid(error))
        }
    }
}
