public import Domain
import IPAddresses
public import Storage
public import Store
import Wire

/// How many accounts may be registered per hour: per client network (`ClientNetwork`: an IPv4
/// address, an IPv6 /64; the `X-Forwarded-For` client behind a trusted proxy) and, as a backstop
/// against an attacker with many addresses, in total. Each registration costs a full scrypt hash
/// and a row that stays, so without these one address created ≈ 85,000 accounts an hour.
public struct RegistrationLimits: Sendable, Equatable {
    /// Registrations one client network may make per sliding hour (`--registrations-per-ip-per-hour`).
    /// A household or office behind one NAT signing up together fits; a script does not.
    public var perNetworkPerHour: Int
    /// Registrations the whole server accepts per sliding hour (`--registrations-per-hour`): bounds
    /// the scrypt time and database growth an address-rotating attacker can cause.
    public var totalPerHour: Int

    /// The window both limits count over.
    public static let windowMilliseconds: Int64 = 60 * 60 * 1000

    /// Defaults: 10 per network, 1,000 in total, per hour.
    public init(perNetworkPerHour: Int = 10, totalPerHour: Int = 1_000) {
        self.perNetworkPerHour = perNetworkPerHour
        self.totalPerHour = totalPerHour
    }
}

/// Admits or refuses registrations under `RegistrationLimits` (sliding windows, `AttemptWindow`),
/// counted in the database (`RegistrationAdmissions`), so the limits hold across restarts and are
/// shared by every instance on one database. An admitted registration is recorded at once, before
/// its password is hashed, so registrations running in parallel all count; a refused one is not
/// recorded (waiting is enough to get in). One write transaction per registration attempt.
public final class RegistrationLimiter: Sendable {
    private let limits: RegistrationLimits
    private let clock: any WallClock
    private let database: any SQLDatabase

    public init(limits: RegistrationLimits, clock: any WallClock, database: any SQLDatabase) {
        self.limits = limits
        self.clock = clock
        self.database = database
    }

    /// Admits (and records) a registration from `clientAddress`, or refuses it with the seconds
    /// until the window has room again (the larger wait when both limits refuse).
    public func admit(clientAddress: String) async throws -> RegistrationAdmissions.Admission {
        let network = ClientNetwork.rateLimitKey(clientAddress)
        let now = clock.nowMilliseconds()
        let limits = limits
        return try await database.write { db in
            try RegistrationAdmissions.admit(
                network: network, perNetwork: limits.perNetworkPerHour, total: limits.totalPerHour,
                windowMilliseconds: RegistrationLimits.windowMilliseconds, at: now, on: db)
        }
    }

    /// Gives back an admission whose registration was never attempted (the hashing queue was full),
    /// so a client retrying after `503` keeps its budget.
    public func refund(_ id: Int64) async throws {
        try await database.write { db in try RegistrationAdmissions.refund(id: id, on: db) }
    }
}
