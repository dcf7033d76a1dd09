public import Dispatch

/// A queue of its own for one piece of blocking test work (socket I/O, a subprocess, a semaphore
/// wait, a poll). A serial queue runs on libdispatch's overcommit pool, which gives each blocked
/// queue a thread; `DispatchQueue.global()` is about as wide as the cores on Linux (8 blocking items
/// of 0.5 s take 2 s there on 2 cores, 0.5 s on a serial queue each), so two tests polling or
/// holding a writer there made every other test's `blocking` call wait behind them.
public func blockingQueue() -> DispatchQueue { DispatchQueue(label: "chronir.test.blocking") }

/// Runs blocking work (socket I/O, a subprocess) on a thread of its own (`blockingQueue`) and returns
/// its result to the caller's task: a test must not block a cooperative thread while the server's
/// handler tasks need one.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        blockingQueue().async { continuation.resume(with: Result { try body() }) }
    }
}

/// Polls `condition` every 5 ms on a thread of its own (`blockingQueue`) until it holds or `timeout`
/// passes; returns whether it held. For side effects that follow what a client saw (a metric recorded
/// after the frame it counts was written): the bound is generous, and passing it is a failure, not a
/// timing.
public func eventually(
    timeout: Duration = LoopbackClient.hangBound, _ condition: @escaping @Sendable () -> Bool
) async -> Bool {
    await withCheckedContinuation { continuation in
        blockingQueue().async {
            continuation.resume(returning: pollUntil(timeout: timeout, condition))
        }
    }
}

/// The same, blocking the calling thread (for tests that are not async).
public func eventually(timeout: Duration = LoopbackClient.hangBound, _ condition: () -> Bool) -> Bool {
    pollUntil(timeout: timeout, condition)
}

/// Awaits `condition` — which may itself await, e.g. send requests — until it holds or `timeout`
/// passes, pausing 20 ms between tries; returns whether it held. For recoveries whose moment the test
/// cannot know (a server back after an outage): the bound is generous, and passing it is a failure.
public func eventuallyAsync(
    timeout: Duration = LoopbackClient.hangBound, _ condition: @Sendable () async -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

private func pollUntil(timeout: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        let pause = DispatchSemaphore(value: 0)
        _ = pause.wait(timeout: .now() + .milliseconds(5))
    }
    return condition()
}
