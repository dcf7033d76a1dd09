import Dispatch
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

    @Test func scheduledWorkRunsAfterItsDelay() async {
        let loop = EventLoop(label: "test")
        let start = ContinuousClock.now
        await withCheckedContinuation { continuation in
            loop.schedule(after: .milliseconds(50)) { continuation.resume() }
        }
        #expect(ContinuousClock.now - start >= .milliseconds(45))
    }

    @Test func cancelledTimerDoesNotRun() async throws {
        let loop = EventLoop(label: "test")
        let fired = Counter()
        let timer = loop.schedule(after: .milliseconds(30)) { fired.add() }
        timer.cancel()
        #expect(timer.isCancelled)
        try await Task.sleep(for: .milliseconds(100))
        #expect(fired.value == 0)
    }

    @Test func repeatingTimerRepeatsUntilCancelled() async throws {
        let loop = EventLoop(label: "test")
        let count = Counter()
        let timer = loop.scheduleRepeating(every: .milliseconds(10)) { count.add() }
        try await Task.sleep(for: .milliseconds(150))
        timer.cancel()
        let seen = count.value
        #expect(seen >= 3)
        try await Task.sleep(for: .milliseconds(50))
        #expect(count.value <= seen + 1)
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
