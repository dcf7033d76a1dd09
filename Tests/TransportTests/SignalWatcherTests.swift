import Glibc
import Testing
import Transport

// Delivery itself is not asserted here: a test process has threads (the runner's) that do not
// block the signal, so a process-directed signal may land there instead of in the signalfd.
// The server executable creates its watcher first thing on the main thread, where it is reliable.
@Suite("Signals")
struct SignalWatcherTests {
    @Test func createsAndCancelsSources() {
        let watcher = SignalWatcher(signals: [SIGUSR2]) { _ in }
        watcher.cancel()
        watcher.cancel()
    }

    @Test func namesSignals() {
        #expect(SignalWatcher.name(of: SIGTERM) == "SIGTERM")
        #expect(SignalWatcher.name(of: SIGINT) == "SIGINT")
        #expect(SignalWatcher.name(of: SIGHUP) == "SIGHUP")
        #expect(SignalWatcher.name(of: 63) == "signal 63")
    }
}
