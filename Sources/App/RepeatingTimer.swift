@preconcurrency import Dispatch

/// A repeating Dispatch timer on its own serial queue — the clockwork of the periodic workers
/// (Sweeper, FireScheduler, NotificationDispatcher). `tick` runs on that queue, never on an event
/// loop, one at a time; `stop` ends future ticks and waits for one in progress (releasing the timer
/// only ends future ticks).
final class RepeatingTimer: Sendable {
    private let source: any DispatchSourceTimer
    private let queue: DispatchQueue

    /// Starts ticking `firstAfter` from now, then every `every` (± `leeway`).
    init(
        label: String, every: DispatchTimeInterval, leeway: DispatchTimeInterval, firstAfter: DispatchTimeInterval,
        tick: @escaping @Sendable () -> Void
    ) {
        queue = DispatchQueue(label: label)
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + firstAfter, repeating: every, leeway: leeway)
        source.setEventHandler(handler: tick)
        source.resume()
    }

    /// Stops future ticks and returns once a tick in progress has finished (idempotent). Never call
    /// it from a tick: it would wait for itself.
    func stop() {
        source.cancel()
        queue.sync {}
    }

    deinit { source.cancel() }
}
