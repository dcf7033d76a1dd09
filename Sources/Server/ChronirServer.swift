import App
import ArgumentParser
import Dispatch
import Foundation
import Logging
import Synchronization
import Transport

/// `chronir-server`: the Chronir group server daemon. The options are declared once, in
/// `ServerOptions` (App); ArgumentParser runs the command (`--help`, errors, exit codes) and
/// `ChronirRuntime` (App) builds and runs what the options describe.
@main
struct ChronirServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chronir-server",
        abstract: "Self-hosted realtime server for groups that share recurring alarms.",
        usage: "chronir-server [--<option> <value>] ...",
        discussion: """
            Runs on an embedded SQLite database in --data-dir (created on first start, with a generated \
            server secret). Stop it with SIGTERM or Ctrl-C: it stops accepting, finishes in-flight \
            requests, closes idle connections and exits 0 within --shutdown-timeout seconds. SIGHUP \
            reloads the TLS certificate. Every option can also be set through the CHRONIR_* environment \
            variable its help names; a flag wins over the environment, and an empty value counts as unset \
            (docs/configuration.md).

            """ + ServerOptions.helpText())

    /// The options, parsed by `ServerOptions` (ArgumentParser handles `--help` itself).
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var options: [String] = []

    func run() throws {
        // First, before anything starts a thread: signals are delivered through a signalfd, which
        // sees only signals every thread blocks (see SignalWatcher). The handler is bound later.
        let signals = SignalTarget()
        let watcher = SignalWatcher(signals: SignalWatcher.shutdownAndReload) { signals.handle($0) }
        let configuration: ChronirConfiguration
        do {
            configuration = try ServerOptions.configuration(arguments: options, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.description)
        }
        let sink = LogSink(fd: 2)
        LoggingSystem.bootstrap { label in
            ChronirLogHandler(label: label, level: configuration.logLevel, format: configuration.logFormat, sink: sink)
        }
        let logger = Logger(label: "chronir.server")
        let runtime: ChronirRuntime
        do {
            runtime = try ChronirRuntime.build(configuration, sink: sink, logger: logger)
        } catch {
            logger.critical(error.what, metadata: error.metadata)
            sink.flush()
            throw ExitCode(1)
        }
        sink.flush()
        signals.bind(runtime, logger: logger, sink: sink)
        Task {
            do {
                try await runtime.run()
                Foundation.exit(0)
            } catch {
                logger.critical("stopped with an error", metadata: ["error": "\(error)"])
                sink.flush()
                Foundation.exit(1)
            }
        }
        withExtendedLifetime(watcher) { dispatchMain() }
    }
}

/// What SIGTERM/SIGINT/SIGHUP do. Before the runtime is bound a signal exits at once (nothing is
/// in flight yet); then the first SIGTERM/SIGINT starts the graceful shutdown, a second one exits
/// at once, and SIGHUP reloads.
final class SignalTarget: Sendable {
    private struct Bound {
        let runtime: ChronirRuntime
        let logger: Logger
        let sink: LogSink
    }

    private let state = Mutex<(bound: Bound?, stopping: Bool)>((nil, false))

    func bind(_ runtime: ChronirRuntime, logger: Logger, sink: LogSink) {
        state.withLock { $0.bound = Bound(runtime: runtime, logger: logger, sink: sink) }
    }

    func handle(_ signal: Int32) {
        let (bound, first) = state.withLock { state -> (Bound?, Bool) in
            if signal == SIGHUP { return (state.bound, true) }
            defer { state.stopping = true }
            return (state.bound, !state.stopping)
        }
        guard let bound else { exit(signal == SIGHUP ? 0 : 1) }
        if signal == SIGHUP { return bound.runtime.reload() }
        guard first else {
            bound.logger.warning("second signal: exiting now")
            bound.sink.flush()
            exit(1)
        }
        bound.logger.notice("shutting down", metadata: ["signal": "\(SignalWatcher.name(of: signal))"])
        bound.sink.flush()
        Task { await bound.runtime.shutDown() }
    }
}
