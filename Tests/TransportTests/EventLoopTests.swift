import Dispatch
import TestSupport
import Testing
import Transport

@Suite("Event loops and timers")
struct EventLoopTests {
    @Test func executeRunsOnTheLoop() async {
        let loop = EventLoop(label: "test")
        #expect(!loop.inEventLoop)
        let onLoop = await withCheckedContinuation { continuation in
            loop.execute {
                loop.preconditionInEventLoop()
                continuation.resume(returning: loop.inEventLoop)
            }
        }
        #expect(onLoop)
    }

    /// A task that prefers a loop starts on it and comes back to it after awaiting work that finished on
    /// another queue (what a request's handler does around a database call).
    @Test func aTaskThatPrefersTheLoopRunsOnItAcrossAwaits() async {
        let loop = EventLoop(label: "test")
        let elsewhere = DispatchQueue(label: "test.elsewhere")
        let seen = await Task(executorPreference: loop) { () async -> [Bool] in
            var seen = [loop.inEventLoop]
            let there = await withCheckedContinuation { continuation in
                elsewhere.async { continuation.resume(returning: loop.inEventLoop) }
            }
            seen.append(there)
            seen.append(loop.inEventLoop)
            return seen
        }.value
        #expect(seen == [true, false, true])
        #expect(!loop.inEventLoop)
    }

    @Test func scheduledWorkRunsOnTheLoopOnceItsDelayHasPassedOnTheLoopsClock() {
        let clock = ManualClock()
        let loop = EventLoop(label: "test", clock: clock)
        let fired = Counter()
        loop.schedule(after: .milliseconds(50)) {
            loop.preconditionInEventLoop()
            fired.add()
        }
        clock.advance(by: 49)
        #expect(fired.value == 0)
        clock.advance(by: 1)  // runs the timer before it returns
        #expect(fired.value == 1)
        clock.advance(by: 1_000)
        #expect(fired.value == 1)  // once
        #expect(clock.pendingTimerCount == 0)
    }

    @Test func cancelledTimerDoesNotRun() {
        let clock = ManualClock()
        let loop = EventLoop(label: "test", clock: clock)
        let fired = Counter()
        let timer = loop.schedule(after: .milliseconds(30)) { fired.add() }
        timer.cancel()
        #expect(timer.isCancelled)
        clock.advance(by: 100)
        #expect(fired.value == 0)
    }

    @Test func repeatingTimerRepeatsUntilCancelled() {
        let clock = ManualClock()
        let loop = EventLoop(label: "test", clock: clock)
        let count = Counter()
        let timer = loop.scheduleRepeating(every: .milliseconds(10)) { count.add() }
        clock.advance(by: 9)
        #expect(count.value == 0)
        for expected in 1...3 {
            clock.advance(by: 10)
            #expect(count.value == expected)
        }
        clock.advance(by: 35)  // several periods in one move run once, as a Dispatch timer's missed repeats do
        #expect(count.value == 4)
        timer.cancel()
        clock.advance(by: 50)
        #expect(count.value == 4)
    }

    @Test func timerOnTheSystemClockRuns() async {
        // The default clock's timers are Dispatch timers (every server test's deadline sweep runs on one);
        // a zero delay is due at once, so nothing here waits for time.
        let loop = EventLoop(label: "test")
        await withCheckedContinuation { continuation in
            loop.schedule(after: .zero) { continuation.resume() }
        }
    }

    @Test func groupHandsOutLoopsRoundRobin() {
        let group = EventLoopGroup(loopCount: 3)
        let picked = (0..<6).map { _ in group.next().index }
        #expect(picked == [0, 1, 2, 0, 1, 2])
        #expect(EventLoopGroup(loopCount: 0).loops.count == 1)
    }

    @Test func socketErrorNamesTheCallAndErrno() {
        let error = SocketError(call: "bind", errno: 98)
        #expect(error.description.hasPrefix("bind: "))
        #expect(error.description.contains("errno 98"))
    }
}
