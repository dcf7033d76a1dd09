@preconcurrency import Dispatch

/// A repeating Dispatch timer on its own serial queue — the clockwork of the periodic workers
/// (Sweeper, FireScheduler, NotificationDispatcher). `tick` runs on that queue, never on an event
/// loop, one at a time; `stop` (or releasing the timer) ends future ticks, one in progress finishes.
final class RepeatingTimer: Sendable {
    private let source: any DispatchSourceTimer

    /// Starts ticking `firstAfter` from now, then every `every` (± `leeway`).
    init(
        label: String, every: DispatchTimeInterval, leeway: DispatchTimeInterval, firstAfter: DispatchTimeInterval,
        tick: @escaping @Sendable () -> Void
    ) {
        source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
        source.schedule(deadline: .now() + firstAfter, repeating: every, leeway: leeway)
        source.setEventHandler(handler: tick)
        source.resume()
    }

    /// Stops future ticks (idempotent).
    func stop() { source.cancel() }

    deinit { source.cancel() }
}
