import Domain
import IPAddresses
import Synchronization
import Wire

/// Counts what each client network (`ClientNetwork`: an IPv4 address, an IPv6 /64) holds open at
/// once — WebSockets — against a per-network `limit`. The client is the address after
/// `ClientAddress.resolve`, so behind a trusted proxy it is the forwarded client, not the proxy:
/// this is where the per-client share holds for proxied clients, whose TCP connections the
/// transport can only see as the proxy's.
public final class AddressQuota: Sendable {
    /// Most a network may hold at once.
    public let limit: Int
    private let held = Mutex<[String: Int]>([:])

    public init(limit: Int) { self.limit = max(1, limit) }

    /// A slot for `clientAddress`'s network, or nil when it holds `limit` already. The slot is
    /// given back by `Slot.release()` or, whatever path the holder takes, when it is deallocated.
    public func acquire(clientAddress: String) -> Slot? {
        let network = ClientNetwork.rateLimitKey(clientAddress)
        let acquired = held.withLock { held in
            guard held[network, default: 0] < limit else { return false }
            held[network, default: 0] += 1
            return true
        }
        return acquired ? Slot(quota: self, network: network) : nil
    }

    /// What `clientAddress`'s network holds now.
    public func count(clientAddress: String) -> Int {
        held.withLock { $0[ClientNetwork.rateLimitKey(clientAddress)] ?? 0 }
    }

    private func giveBack(_ network: String) {
        held.withLock { held in
            let left = (held[network] ?? 1) - 1
            held[network] = left > 0 ? left : nil
        }
    }

    /// One held unit of a quota; released once, explicitly or at deinit.
    public final class Slot: Sendable {
        private let quota: AddressQuota
        private let network: String
        private let released = Atomic<Bool>(false)

        fileprivate init(quota: AddressQuota, network: String) {
            self.quota = quota
            self.network = network
        }

        /// Gives the slot back (idempotent).
        public func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            quota.giveBack(network)
        }

        deinit { release() }
    }
}
