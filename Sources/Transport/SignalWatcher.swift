public import Dispatch
import Glibc

/// Delivers process signals (SIGTERM, SIGINT, SIGHUP, …) as ordinary callbacks on a queue, via
/// `DispatchSource.makeSignalSource`. The default disposition of each watched signal is set to
/// ignore first, so the signal no longer kills the process and only the source sees it.
///
/// Linux: libdispatch reads signals through a `signalfd`, which only sees a signal that every
/// thread blocks (a thread that does not block it may take it, and with `SIG_IGN` drop it).
/// libdispatch's own threads block signals; the watcher also blocks them in the calling thread.
/// So create the watcher on the main thread at startup, before anything starts threads of its
/// own: threads created afterwards inherit the mask.
///
/// Keep the watcher alive for as long as the signals should be handled; `cancel()` stops watching
/// (the signals stay ignored).
public final class SignalWatcher: @unchecked Sendable {
    // @unchecked: the sources are immutable after init and dispatch_source_cancel is thread-safe.
    private let sources: [any DispatchSourceSignal]

    /// SIGTERM: `systemctl stop`, container stop — graceful shutdown.
    public static let terminate = SIGTERM
    /// SIGINT: Ctrl-C — graceful shutdown.
    public static let interrupt = SIGINT
    /// SIGHUP: reopen logs / reload material.
    public static let hangUp = SIGHUP

    /// SIGTERM, SIGINT and SIGHUP: what the server executable watches.
    public static let shutdownAndReload: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// Watches `signals`, calling `handler(signal)` on `queue` each time one arrives.
    public init(
        signals: [Int32] = SignalWatcher.shutdownAndReload, queue: DispatchQueue = DispatchQueue(label: "chronir.signals"),
        handler: @escaping @Sendable (Int32) -> Void
    ) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            var mask = sigset_t()
            sigemptyset(&mask)
            sigaddset(&mask, number)
            pthread_sigmask(SIG_BLOCK, &mask, nil)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.activate()
            return source
        }
    }

    deinit { cancel() }

    /// Stops delivering signals to the handler.
    public func cancel() { sources.forEach { $0.cancel() } }

    /// `"SIGTERM"`, `"SIGINT"`, `"SIGHUP"`, or `"signal N"`.
    public static func name(of signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        default: "signal \(signal)"
        }
    }
}
