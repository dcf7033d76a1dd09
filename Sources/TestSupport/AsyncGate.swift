/// Lets at most `width` callers at a time through `run`; the others wait their turn, first come
/// first served, suspended rather than blocking a thread. For tests that start hundreds of cases
/// at once (a parameterized test) but should not all build their fixtures at the same moment.
public actor AsyncGate {
    private let width: Int
    private var inside = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public init(width: Int) {
        precondition(width > 0, "a gate lets at least one through")
        self.width = width
    }

    /// Runs `body` once fewer than `width` others are inside, and returns or throws what it did.
    public nonisolated func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await enter()
        do {
            let result = try await body()
            await leave()
            return result
        } catch {
            await leave()
            throw error
        }
    }

    private func enter() async {
        if inside < width {
            inside += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }  // the leaver hands its place over
    }

    private func leave() {
        if waiting.isEmpty {
            inside -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
