public import Identity
import Logging
import Storage
import Store
import Synchronization

/// Catches up with App Store notifications the server never received — it was down, or unreachable,
/// longer than Apple retries (five times, over about three days) — through Get Notification History
/// (docs/subscriptions.md#app-store-server-api). Each `signedPayload` goes through the same handling
/// as `POST /v1/store/apple/notifications` (`SubscriptionRoutes.handleAppleNotification`): verified,
/// recorded by `notificationUUID` (a notification already handled is a `duplicate` and changes
/// nothing), applied in its own transaction.
///
/// When: at the first pass after start-up, then once `interval` has passed since the last complete
/// catch-up; after a failure, `retryMilliseconds` later. The window runs from `overlapMilliseconds`
/// before the last catch-up's end (never caught up: `firstWindowMilliseconds` back; never more than
/// Apple's `retentionMilliseconds`) to now. At most `maxPagesPerPass` pages a pass; the cursor
/// (migration 0041) moves after each page whose notifications are all handled, so a catch-up cut
/// short goes on from its last complete page.
public final class AppStoreHistoryCatchUp: Sendable {
    /// How long after a complete catch-up the next one is due.
    public static let interval: Int64 = 60 * 60_000
    /// How far before the last catch-up's end the next window starts (notifications Apple sent just
    /// before it and recorded late; a replay is a harmless duplicate).
    public static let overlapMilliseconds: Int64 = 10 * 60_000
    /// The first catch-up's window (no cursor yet): as far back as the expiry refresh looks.
    public static let firstWindowMilliseconds: Int64 = AppStoreRefresher.lookbackMilliseconds
    /// Apple keeps notification history for 180 days; a window never starts earlier (less a minute's margin).
    public static let retentionMilliseconds: Int64 = 180 * 86_400_000 - 60_000
    /// Most history pages read in one pass (Apple pages 20 notifications); the rest wait for the next pass.
    public static let maxPagesPerPass = 20
    /// How long after a failed catch-up (API unreachable, key refused, database error) it is tried again.
    public static let retryMilliseconds: Int64 = 15 * 60_000

    /// What one run did.
    public enum Outcome: Sendable, Equatable {
        /// Not due.
        case notDue
        /// Every page of the window was read and handled; the counts of notifications per outcome.
        case caughtUp([String: Int])
        /// `maxPagesPerPass` pages were handled and more remain: the next pass goes on.
        case partial([String: Int])
        /// The API refused the key (401); retried later.
        case unauthorized
        /// The API (or the database) could not be reached, or Apple refused the window: retried later;
        /// the counts of what was handled before.
        case unavailable([String: Int])
    }

    private let api: AppStoreServerAPI
    private let verifier: AppStoreVerifier
    private let services: Services
    /// Whether a catch-up has completed since this process started, and when a failed one is retried.
    private let state = Mutex<(startedUp: Bool, retryAt: Int64?)>((false, nil))

    /// A catch-up reading through `api`, verifying with `verifier`, writing through `services`.
    public init(api: AppStoreServerAPI, verifier: AppStoreVerifier, services: Services) {
        self.api = api
        self.verifier = verifier
        self.services = services
    }

    /// Runs a catch-up at `now` if one is due (see the type's comment).
    public func run(at now: Int64) async -> Outcome {
        let logger = services.logger
        let (startedUp, retryAt) = state.withLock { $0 }
        if let retryAt, now < retryAt { return .notDue }
        let cursor: EntitlementStore.AppStoreHistoryCursor
        do {
            cursor = try await services.database.read { db in try EntitlementStore.appStoreHistoryCursor(on: db) }
        } catch {
            logger.error("appstore history: cannot read the cursor", metadata: ["error": "\(error)"])
            return failed(.unavailable([:]), at: now)
        }
        let start: Int64
        let end: Int64
        var pageToken: String?
        if let pending = cursor.pending {
            (start, end, pageToken) = (pending.start, pending.end, pending.pageToken)
        } else {
            if startedUp, let caughtUp = cursor.caughtUpMilliseconds, now - caughtUp < Self.interval { return .notDue }
            let from = (cursor.caughtUpMilliseconds ?? now - Self.firstWindowMilliseconds) - Self.overlapMilliseconds
            start = max(from, now - Self.retentionMilliseconds)
            end = now
        }
        var counts: [String: Int] = [:]
        for _ in 0..<Self.maxPagesPerPass {
            let page: AppStoreServerAPI.HistoryPage
            let windowStart = max(start, now - Self.retentionMilliseconds)
            switch await api.notificationHistory(start: windowStart, end: end, pageToken: pageToken, now: now) {
            case .success(let read): page = read
            case .failure(.unauthorized):
                logger.error(
                    """
                    appstore history: the App Store Server API refused the key (401): check --appstore-key-file, --appstore-key-id, \
                    --appstore-issuer-id and --appstore-bundle-id
                    """)
                return failed(.unauthorized, at: now)
            case .failure(let failure):
                logger.warning("appstore history: Get Notification History failed", metadata: ["error": "\(failure)"])
                return failed(.unavailable(counts), at: now)
            }
            for payload in page.signedPayloads {
                do {
                    let outcome = try await SubscriptionRoutes.handleAppleNotification(payload, verifier: verifier, services: services)
                    counts[outcome, default: 0] += 1
                    if outcome != "duplicate" { services.metrics.storeHistoryNotification(outcome: outcome) }
                } catch let error as APIError where error.code == .purchaseInvalid {
                    // Refused by verification (counted there): it stays refused however often it is read.
                    logger.warning("appstore history: a notification was refused", metadata: ["error": "\(error.message)"])
                    counts["refused", default: 0] += 1
                } catch {
                    logger.error("appstore history: cannot apply a notification", metadata: ["error": "\(error)"])
                    return failed(.unavailable(counts), at: now)
                }
            }
            do {
                if let next = page.nextPageToken {
                    try await services.database.write { db in
                        try EntitlementStore.appStoreHistoryPending(start: start, end: end, pageToken: next, on: db)
                    }
                    pageToken = next
                } else {
                    try await services.database.write { db in try EntitlementStore.appStoreHistoryCaughtUp(until: end, on: db) }
                    state.withLock { $0 = (true, nil) }
                    logger.info("appstore history: caught up", metadata: ["counts": "\(counts)"])
                    return .caughtUp(counts)
                }
            } catch {
                logger.error("appstore history: cannot write the cursor", metadata: ["error": "\(error)"])
                return failed(.unavailable(counts), at: now)
            }
        }
        return .partial(counts)
    }

    /// Nothing more this run; tried again `retryMilliseconds` from `now`.
    private func failed(_ outcome: Outcome, at now: Int64) -> Outcome {
        state.withLock { $0.retryAt = now + Self.retryMilliseconds }
        return outcome
    }
}
