import Dispatch
import Glibc
import Testing
import Transport

@Suite("Signals")
struct SignalWatcherTests {
    @Test func deliversARaisedSignalToTheHandler() {
        let seen = Counter()
        let watcher = SignalWatcher(signals: [SIGUSR2]) { number in seen.store(Int(number)) }
        kill(getpid(), SIGUSR2)
        #expect(eventually { seen.value == Int(SIGUSR2) })
        watcher.cancel()
        #expect(SignalWatcher.name(of: SIGTERM) == "SIGTERM")
    }
}
