import Synchronization

/// Which account each session token of this process's recent requests belongs to: SHA-256 of the
/// token → user id. A session's account never changes, so an entry is never wrong — it says nothing
/// about whether the session is still valid (revoked, expired, the account suspended or deleted):
/// `Services.writeAsUser` still checks that in the write's own transaction, with the write's first
/// statement instead of a read of its own before it (docs/scaling.md, "The session read inside the
/// write"). Filled by `Services.authenticate`; an entry whose session was found invalid is forgotten.
///
/// Bounded: at most `maxEntries`. Reaching the bound empties the map (each token then takes one
/// separate session read again: the price of a bound, paid only when that many sessions write within
/// one fill).
public final class SessionOwners: Sendable {
    /// The most tokens remembered at once (≈ 150 bytes each: ≈ 7.5 MiB at the default).
    public let maxEntries: Int
    private let owners = Mutex<[[UInt8]: String]>([:])

    /// Default `maxEntries`: more sessions than write within a fill on a household server.
    public static let defaultMaxEntries = 50_000

    public init(maxEntries: Int = SessionOwners.defaultMaxEntries) {
        precondition(maxEntries >= 1, "maxEntries must be positive")
        self.maxEntries = maxEntries
    }

    /// The account of the session whose token hashes to `tokenHash`, if this process saw it.
    public func owner(of tokenHash: [UInt8]) -> String? { owners.withLock { $0[tokenHash] } }

    /// Remembers that `tokenHash`'s session belongs to `userID` (it was just found valid).
    public func record(_ tokenHash: [UInt8], owner userID: String) {
        owners.withLock { owners in
            if owners[tokenHash] == userID { return }
            if owners.count >= maxEntries { owners.removeAll(keepingCapacity: true) }
            owners[tokenHash] = userID
        }
    }

    /// Forgets `tokenHash` (its session was found invalid: the next request reads it again).
    public func forget(_ tokenHash: [UInt8]) { _ = owners.withLock { $0.removeValue(forKey: tokenHash) } }

    /// Tokens remembered now.
    public var count: Int { owners.withLock { $0.count } }
}
