@preconcurrency import Dispatch
import Synchronization
import Transport

/// A `RepeatingTimer` whose ticks start an asynchronous pass (one that awaits the network and the
/// database), one pass at a time: a tick while a pass runs does nothing. `stop` ends the ticks and waits
/// for a pass in progress. The store refreshes and retries (App Store status refresh, Play acknowledgement
/// retry) run on it, on the injected monotonic clock.
final class PassTimer: Sendable {
    private let timer = Mutex<RepeatingTimer?>(nil)
    /// A pass is running.
    private let running = Mutex(false)
    /// Entered while a pass runs: `stop` waits on it.
    private let passes = DispatchGroup()
    private let pass: @Sendable () async -> Void

    /// Ticks every `every` on `ticks`, first after one `every`; each tick starts `pass` unless one runs.
    init(label: String, every: DispatchTimeInterval, ticks: any MonotonicClock, pass: @escaping @Sendable () async -> Void) {
        self.pass = pass
        let repeating = RepeatingTimer(label: label, every: every, leeway: .seconds(1), firstAfter: every, clock: ticks) {
            [weak self] in self?.tick()
        }
        timer.withLock { $0 = repeating }
    }

    /// On the timer's queue: starts a pass unless one runs.
    private func tick() {
        let starts = running.withLock { running -> Bool in
            guard !running else { return false }
            running = true
            return true
        }
        guard starts else { return }
        passes.enter()
        Task { [self] in
            await pass()
            running.withLock { $0 = false }
            passes.leave()
        }
    }

    /// Stops the ticks and waits for a pass in progress (blocks: call it off the cooperative pool).
    func stop() {
        let stopping = timer.withLock { timer -> RepeatingTimer? in
            defer { timer = nil }
            return timer
        }
        stopping?.stop()
        passes.wait()
    }
}

/// The one `PassTimer` of a background job, started and stopped by its owner (the App Store refresher,
/// the Play acknowledgement retries): `start` replaces a running one, `stop` ends it and waits.
final class PassSchedule: Sendable {
    private let timer = Mutex<PassTimer?>(nil)

    /// Starts `pass` every `every` on `ticks` under `label` (`PassTimer`).
    func start(label: String, every: DispatchTimeInterval, ticks: any MonotonicClock, pass: @escaping @Sendable () async -> Void) {
        let repeating = PassTimer(label: label, every: every, ticks: ticks, pass: pass)
        timer.withLock { $0 = repeating }
    }

    /// Stops the timer and waits for a pass in progress (blocks: call it off the cooperative pool).
    func stop() {
        let stopping = timer.withLock { timer -> PassTimer? in
            defer { timer = nil }
            return timer
        }
        stopping?.stop()
    }
}
