@preconcurrency public import Dispatch
import Domain
public import Identity
import Logging
import Storage
import Store
public import Transport

/// Reads App Store purchases' status from the App Store Server API (docs/subscriptions.md#app-store-server-api)
/// and applies it exactly as a posted purchase is applied: the signed transaction and renewal info
/// are verified (`SubscriptionRoutes.verifiedSignedData`), turned into the purchase's values
/// (`SubscriptionRoutes.purchaseUpdate`) and applied (`EntitlementStore.apply`, cause `refresh`).
///
/// Which purchases, when (`EntitlementStore.appStoreRefreshesDue`): one whose period ended without
/// data saying what came next — a renewal or a refund whose notification never arrived (Apple retries
/// a notification five times, then gives up) — once, at its expiry; one an operator asked for
/// (`chronir-admin purchases refresh`); one whose refresh failed, `retryMilliseconds` later; and every
/// active one once every `dailyMilliseconds` after its last refresh (or its creation), so a missed
/// renewal, refund or revocation notification is corrected within a day. A timer on the injected
/// monotonic clock starts a pass every `tick`; one pass at a time, at most `batchSize` purchases each
/// (50 a minute: 72,000 a day, the bound on how many active App Store subscriptions a day's refresh covers).
public final class AppStoreRefresher: Sendable {
    /// How often the timer looks for due refreshes (and an operator's request waits at most).
    public static let tick: DispatchTimeInterval = .seconds(60)
    /// How long after a failed refresh (API unreachable, key refused, data refused) it is tried again.
    public static let retryMilliseconds: Int64 = 15 * 60_000
    /// Periods that ended longer ago than this are not refreshed by expiry (the first start after this
    /// feature, or after a long outage, does not read every subscription that ever lapsed).
    public static let lookbackMilliseconds: Int64 = 7 * 86_400_000
    /// How long after its last refresh (or its creation) an active purchase is refreshed again.
    public static let dailyMilliseconds: Int64 = 86_400_000
    /// Most purchases one pass refreshes (one request each); the rest wait for the next tick.
    public static let batchSize = 50

    /// What one refresh did.
    public enum Outcome: String, Sendable, Equatable {
        /// Apple's data was applied (the entitlement follows it).
        case applied
        /// Apple's data was older than what the purchase has: nothing changed.
        case stale
        /// Apple does not know the transaction, or its product is not in the catalogue: nothing changed.
        case notFound = "not_found"
        /// Apple's signed data failed verification: nothing changed, retried later.
        case refused
        /// Apple refused the key (401): nothing changed, retried later; the log says which flags to check.
        case unauthorized
        /// The API (or the database) could not be reached: nothing changed, retried later.
        case unavailable
    }

    private let api: AppStoreServerAPI
    private let verifier: AppStoreVerifier
    private let services: Services
    private let schedule = PassSchedule()
    /// The Get Notification History catch-up the timer runs before each pass.
    public let history: AppStoreHistoryCatchUp

    /// A refresher reading through `api`, verifying with `verifier`, writing through `services`.
    public init(api: AppStoreServerAPI, verifier: AppStoreVerifier, services: Services) {
        self.api = api
        self.verifier = verifier
        self.services = services
        self.history = AppStoreHistoryCatchUp(api: api, verifier: verifier, services: services)
    }

    /// Starts the timer on `ticks` (real time by default; a test passes its `ManualClock`): every
    /// `every`, first after one `every`, the history catch-up when due (`AppStoreHistoryCatchUp`), then
    /// a pass, dated by the services' wall clock.
    public func start(ticks: any MonotonicClock = SystemMonotonicClock(), every: DispatchTimeInterval = AppStoreRefresher.tick) {
        let clock = services.clock
        schedule.start(label: "chronir.appstore-refresh", every: every, ticks: ticks) { [self] in
            _ = await history.run(at: clock.nowMilliseconds())
            _ = await pass(at: clock.nowMilliseconds())
        }
    }

    /// Stops the timer and waits for a pass in progress (blocks: call it off the cooperative pool).
    public func stop() { schedule.stop() }

    /// Refreshes every purchase due at `now` (at most `batchSize`); returns each one's outcome.
    public func pass(at now: Int64) async -> [String: Outcome] {
        let due: [EntitlementStore.RefreshDue]
        do {
            due = try await services.database.read { db in
                try EntitlementStore.appStoreRefreshesDue(
                    at: now, since: now - Self.lookbackMilliseconds, dailyEvery: Self.dailyMilliseconds, limit: Self.batchSize, on: db)
            }
        } catch {
            services.logger.error("appstore refresh: cannot read due purchases", metadata: ["error": "\(error)"])
            return [:]
        }
        var outcomes: [String: Outcome] = [:]
        for purchase in due {
            let outcome = await refresh(storeID: purchase.storeID, at: now)
            services.metrics.appStoreRefresh(outcome: outcome.rawValue)
            outcomes[purchase.storeID] = outcome
        }
        return outcomes
    }

    /// Reads `storeID`'s status from Apple and applies it; on failure nothing changes and the refresh
    /// is due again `retryMilliseconds` later.
    public func refresh(storeID: String, at now: Int64) async -> Outcome {
        let logger = services.logger
        let metadata: Logger.Metadata = ["original_transaction_id": "\(storeID)"]
        let status: AppStoreServerAPI.SignedStatus
        switch await api.subscriptionStatuses(originalTransactionID: storeID, now: now) {
        case .failure(.unavailable(let why)):
            logger.warning("appstore refresh: App Store Server API unavailable", metadata: metadata.merging(["error": "\(why)"]) { $1 })
            return await retryLater(storeID, .unavailable, at: now)
        case .failure(.unauthorized):
            logger.error(
                """
                appstore refresh: the App Store Server API refused the key (401): check --appstore-key-file, --appstore-key-id, \
                --appstore-issuer-id and --appstore-bundle-id
                """, metadata: metadata)
            return await retryLater(storeID, .unauthorized, at: now)
        case .failure(.notFound):
            logger.warning("appstore refresh: Apple does not know the transaction", metadata: metadata)
            return await settle(storeID, .notFound, at: now)
        case .success(let statuses):
            guard let found = statuses.first(where: { $0.originalTransactionID == storeID }) else {
                logger.warning("appstore refresh: the answer has no status for the transaction", metadata: metadata)
                return await settle(storeID, .notFound, at: now)
            }
            status = found
        }
        let update: EntitlementStore.PurchaseUpdate
        do {
            let (transaction, renewal) = try SubscriptionRoutes.verifiedSignedData(
                signedTransaction: status.signedTransaction, signedRenewalInfo: status.signedRenewalInfo, verifier: verifier)
            guard transaction.originalTransactionID == storeID else {
                throw APIError(.purchaseInvalid, "signed_transaction is another subscription's", field: "signed_transaction")
            }
            guard let known = SubscriptionRoutes.purchaseUpdate(transaction, renewal, services.config.subscriptions.catalogue) else {
                logger.warning("appstore refresh: product not in the catalogue", metadata: metadata)
                return await settle(storeID, .notFound, at: now)
            }
            update = known
        } catch {
            let why = (error as? APIError)?.message ?? "\(error)"
            logger.error("appstore refresh: Apple's signed data refused", metadata: metadata.merging(["error": "\(why)"]) { $1 })
            return await retryLater(storeID, .refused, at: now)
        }
        do {
            let applied = try await services.database.write { db -> Bool in
                let result = try EntitlementStore.apply(update, bindTo: nil, cause: .refresh, actor: .system, at: now, on: db)
                try EntitlementStore.appStoreRefreshed(storeID: storeID, at: now, on: db)
                return result.applied
            }
            return applied ? .applied : .stale
        } catch {
            logger.error("appstore refresh: cannot write", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return .unavailable
        }
    }

    /// Nothing to apply, but Apple answered: no refresh pending until the period ends again or a day has passed.
    private func settle(_ storeID: String, _ outcome: Outcome, at now: Int64) async -> Outcome {
        _ = try? await services.database.write { db in try EntitlementStore.appStoreRefreshed(storeID: storeID, at: now, on: db) }
        return outcome
    }

    /// Nothing changed; the refresh is due again `retryMilliseconds` from `now`.
    private func retryLater(_ storeID: String, _ outcome: Outcome, at now: Int64) async -> Outcome {
        let retryAt = now + Self.retryMilliseconds
        _ = try? await services.database.write { db in try EntitlementStore.deferAppStoreRefresh(storeID: storeID, until: retryAt, on: db) }
        return outcome
    }
}
