import Foundation

/// A fake service from `Tests/Fakes` running in the `PythonEnvironment` venv: started with its
/// arguments, ready once it has printed `READY <port> [<port>…]` (the loopback ports it bound
/// itself), terminated by `stop()` or when released.
public final class PythonService: Sendable {
    /// How long start-up (not counting the venv's creation) may take.
    public static let startTimeout: Duration = .seconds(60)

    /// The ports the service printed, in its order.
    public let ports: [Int]
    private let child: ChildProcess

    /// Starts `Tests/Fakes/<script>` with `arguments` and waits for its READY line.
    public init(script: String, arguments: [String] = []) throws {
        let python = try PythonEnvironment.python()
        child = try ChildProcess(launching: python, ["-u", PythonEnvironment.fake(script)] + arguments)
        let line = try child.readLine(timeout: Self.startTimeout)
        let words = line.split(separator: " ")
        guard words.first == "READY", words.count > 1, let ports = Optional(words.dropFirst().compactMap { Int($0) }),
            ports.count == words.count - 1
        else {
            child.terminate()
            throw ChildProcess.Failure(description: "\(script) printed \(line.debugDescription), not READY <port>…")
        }
        self.ports = ports
    }

    /// Terminates the service (idempotent).
    public func stop() {
        child.terminate()
    }

    /// What the service wrote to standard error (its log), for failure messages.
    public var log: String { child.standardError }
}
