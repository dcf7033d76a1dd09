@preconcurrency public import Dispatch
public import Domain
import Foundation
public import Logging
public import Outbound
public import Storage
import Store

/// Hands queued mails to the SMTP server (docs/mail.md#pipeline). The notification dispatcher's
/// machinery, shared rather than copied: `RoundLoop` (timer, one round at a time, back-to-back
/// rounds for a backlog, stop and the bounded wait at shutdown, bounded concurrency), `RetryPolicy`
/// (back-off with jitter), `SendOutcome` and `ProviderExchange`'s reading of transport failures, and
/// the same lease discipline (a claim holds 2 minutes; a dead instance's mails are sent by another).
/// What differs is what a row is — one mail to one address, no expansion step, no devices — so the
/// store side (`MailOutbox`) is its own. Delivery is at-least-once.
public final class MailDispatcher: Sendable {
    /// Named limits of one dispatcher.
    public struct Limits: Sendable, Equatable {
        /// Mails in flight at once: SMTP servers limit connections per client (often 5–10).
        public var maxConcurrentSends = 4
        /// Mails claimed per round.
        public var claimBatch = 64
        /// How long a claim holds: longer than any send (`SMTPMailSender.timeout` 30 s).
        public var leaseMilliseconds: Int64 = 120_000
        public init() {}
    }

    /// What one round did.
    public struct Round: Sendable, Equatable {
        public var claimed = 0
        public var sent = 0
        public var retried = 0
        public var failed = 0
        /// Requests (`MailOutbox.enqueueRequest`) for an address with no active account: settled
        /// `failed`, never sent.
        public var dropped = 0
        public init() {}
    }

    /// How often a round starts when the previous one is done.
    public static let defaultTick: DispatchTimeInterval = .seconds(1)

    private let database: any SQLDatabase
    private let clock: any WallClock
    private let logger: Logger
    private let sender: SMTPMailSender
    private let publicBaseURL: String
    private let limits: Limits
    private let retry: RetryPolicy
    private let metrics: MailMetrics?
    private let unitRandom: @Sendable () -> Double
    private let owner = "mail:" + UUID().uuidString.lowercased()
    private let loop = RoundLoop(label: "chronir.mail-dispatcher")

    /// A dispatcher sending through `sender`; `publicBaseURL` is the base of the links in the mails it
    /// prepares itself (password resets). Call `start` for the timer; tests call `runOnce`.
    public init(
        database: any SQLDatabase, clock: any WallClock, logger: Logger, sender: SMTPMailSender, publicBaseURL: String,
        limits: Limits = Limits(),
        retry: RetryPolicy = RetryPolicy(), metrics: MailMetrics? = nil,
        unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.database = database
        self.clock = clock
        self.logger = logger
        self.sender = sender
        self.publicBaseURL = publicBaseURL
        self.limits = limits
        self.retry = retry
        self.metrics = metrics
        self.unitRandom = unitRandom
    }

    /// Starts a round every `tick`; rounds follow each other at once while one fills its claim batch.
    public func start(tick: DispatchTimeInterval = MailDispatcher.defaultTick) {
        loop.start(tick: tick) { [self] in
            do {
                var more = true
                while more, !loop.isStopped {
                    let round = try await runOnce(at: clock.nowMilliseconds())
                    more = round.claimed >= limits.claimBatch || round.dropped >= limits.claimBatch
                    if round.claimed + round.dropped > 0 {
                        logger.info(
                            "mail sent",
                            metadata: [
                                "sent": "\(round.sent)", "retried": "\(round.retried)", "failed": "\(round.failed)",
                                "dropped": "\(round.dropped)",
                            ])
                    }
                }
            } catch {
                logger.error("mail dispatcher failed", metadata: ["error": "\(error)"])
            }
            return nil
        }
    }

    /// Stops future rounds (one in progress finishes: `waitUntilIdle`).
    public func stop() { loop.stop() }

    /// Waits (blocking) until no round is running, at most `timeout`; returns whether it is idle.
    @discardableResult
    public func waitUntilIdle(timeout: Duration = .seconds(20)) -> Bool { loop.waitUntilIdle(timeout: timeout) }

    /// One round at `now`: prepare due requests and claim due mails in one write, send them, settle
    /// every outcome in one write. Both are `.concurrent` writes (PostgreSQL: beside other instances'
    /// writes): the claim takes its rows with `forUpdateSkipLocked` (`MailOutbox.claim`,
    /// `unprepared`), and a settle changes only mails this dispatcher leased; what a preparation reads
    /// (the account of the address) changes only in `.immediate` writes, which never run beside it.
    @discardableResult
    public func runOnce(at now: Int64) async throws -> Round {
        let (owner, limits, base) = (owner, limits, publicBaseURL)
        let (claimed, dropped) = try await database.write(.concurrent) { db in
            let dropped = try Self.prepareRequests(at: now, base: base, limit: limits.claimBatch, on: db)
            let claimed = try MailOutbox.claim(
                owner: owner, at: now, leaseUntil: now + limits.leaseMilliseconds, limit: limits.claimBatch, on: db)
            return (claimed, dropped)
        }
        var round = Round()
        round.claimed = claimed.count
        round.dropped = dropped
        let sender = sender
        let outcomes = await RoundLoop.boundedMap(claimed, width: limits.maxConcurrentSends) { mail in
            (mail, await sender.send(mail, now: now))
        }.map { mail, outcome -> (MailOutbox.Mail, SendOutcome, Int64?) in
            guard case .retry(_, let retryAfter) = outcome else { return (mail, outcome, nil) }
            return (mail, outcome, now + retry.delay(attempts: mail.attempts, retryAfterMilliseconds: retryAfter, unit: unitRandom()))
        }
        let kept = try await database.write(.concurrent) { db in
            try outcomes.map { mail, outcome, next -> Bool in
                switch outcome {
                case .delivered:
                    try MailOutbox.markSent(mail.id, at: now, on: db)
                case .retry(let reason, _):
                    return try MailOutbox.retry(mail.id, at: next ?? now, error: reason, now: now, on: db)
                case .rejected(let reason), .deviceGone(let reason):
                    try MailOutbox.fail(mail.id, error: reason, at: now, on: db)
                }
                return true
            }
        }
        for ((mail, outcome, _), kept) in zip(outcomes, kept) {
            let kind = mail.kind.rawValue
            switch outcome {
            case .delivered:
                round.sent += 1
                metrics?.record(kind: kind, outcome: "sent")
            case .retry(let reason, _):
                if kept { round.retried += 1 } else { round.failed += 1 }
                metrics?.record(kind: kind, outcome: kept ? "retried" : "expired")
                logger.notice(
                    kept ? "mail send failed, will retry" : "mail send failed, expired",
                    metadata: ["mail_id": "\(mail.id)", "attempts": "\(mail.attempts + 1)", "reason": "\(reason)"])
            case .rejected(let reason), .deviceGone(let reason):
                round.failed += 1
                metrics?.record(kind: kind, outcome: "failed")
                logger.warning("mail refused", metadata: ["mail_id": "\(mail.id)", "reason": "\(reason)"])
            }
        }
        if let metrics { metrics.pending(try await database.readStatement { db in try MailOutbox.depth(on: db) }) }
        return round
    }
}

extension MailDispatcher {
    /// Prepares up to `limit` due requests (`MailOutbox.enqueueRequest`) in the caller's transaction;
    /// returns how many were dropped. A `password_reset` request for an active account gets its token
    /// (`EmailTokens`, expiring with the request) and its text; one for any other address — unknown,
    /// suspended — is settled `failed` and never sent. This is where an account is looked up for a
    /// reset, on the dispatcher's tick and not in the request (docs/mail.md#password-reset).
    static func prepareRequests(at now: Int64, base: String, limit: Int, on db: any SQLConnection) throws -> Int {
        var dropped = 0
        for request in try MailOutbox.unprepared(at: now, limit: limit, on: db) {
            guard request.kind == .passwordReset, let user = try AccountStore.user(email: request.recipient, on: db),
                user.status == .active
            else {
                let reason = request.kind == .passwordReset ? "no active account with this address: not sent" : "no text for this kind"
                try MailOutbox.fail(request.id, error: reason, at: now, on: db)
                dropped += 1
                continue
            }
            let (token, hash) = TokenHashing.generate()
            let mail = MailTemplates.passwordReset(to: request.recipient, userID: user.id, base: base, token: token, now: request.createdAt)
            try EmailTokens.issue(
                .passwordReset, tokenHash: hash, userID: user.id, email: request.recipient, at: now, expiresAt: request.expiresAt, on: db)
            try MailOutbox.prepare(request.id, body: mail.body, userID: user.id, on: db)
        }
        return dropped
    }
}

/// The mail pipeline of one server process: the outbound client and the dispatcher, built at
/// start-up when `--smtp-url` is set, started once the server listens, stopped on shutdown.
public final class MailService: Sendable {
    public let client: OutboundClient
    public let dispatcher: MailDispatcher

    /// Nil when `config` has no SMTP server. The SMTP server is the operator's own choice, so it may
    /// be on a private or loopback address (a local relay); `caFile` is `--outbound-ca-file`;
    /// `publicBaseURL` the base of the links in mails the dispatcher prepares.
    public init?(
        config: MailConfiguration, caFile: String?, publicBaseURL: String, database: any SQLDatabase, clock: any WallClock, logger: Logger,
        metrics: MailMetrics? = nil
    ) {
        let client = OutboundClient(
            configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: true), caFile: caFile))
        guard let sender = SMTPMailSender(config: config, client: client) else {
            client.close()
            return nil
        }
        self.client = client
        dispatcher = MailDispatcher(
            database: database, clock: clock, logger: logger, sender: sender, publicBaseURL: publicBaseURL, metrics: metrics)
    }

    /// Starts the dispatcher.
    public func start() { dispatcher.start() }

    /// Stops the dispatcher's timer, closes the client (sends in flight fail and are retried after a
    /// restart), and waits for the round to settle them.
    public func stop() {
        dispatcher.stop()
        client.close()
        dispatcher.waitUntilIdle()
    }
}
