import Foundation

/// A child process for tests' helpers and fake services, started with posix_spawn (not Foundation's
/// `Process`, which on Linux can miss the exit of a child that leaves a daemon behind; see
/// `PostgresServer.run`). Either run to completion (`run`) or kept running with its standard
/// output readable line by line (`init(launching:)`) until `terminate()`.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `pid` and the pipe are immutable; `exited` is guarded by `lock`.

    /// The child's process id.
    public let pid: Int32
    /// Where the child's standard error goes (a temporary file), for failure messages.
    public let standardErrorPath: String
    private let output: Int32
    private let lock = NSLock()
    private var exited = false
    private var pending: [UInt8] = []

    /// The child failed to start, timed out, or exited unsuccessfully (what ran, what it printed).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `tool` (a path, or a name looked up in `PATH` through /usr/bin/env) with its standard
    /// output on a pipe this object reads, standard input from /dev/null and standard error to a
    /// temporary file.
    /// `removing` names variables of this process's environment the child must not see.
    public init(
        launching tool: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = []
    ) throws {
        var pipeEnds: [Int32] = [0, 0]
        // A socket pair made close-on-exec atomically (pipe2 is not imported): a child another test
        // spawns meanwhile must not inherit this output's write end, or a reader waiting for EOF
        // would wait for that unrelated child to exit (a fake server lives for a whole suite).
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, kind, 0, &pipeEnds) == 0 else {
            throw Failure(description: "socketpair failed: errno \(errno)")
        }
        standardErrorPath = FileManager.default.temporaryDirectory.path + "/chronir-child-\(UInt64.random(in: 0...UInt64.max)).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, standardErrorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
        posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        let argv = (["/usr/bin/env", tool] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        for name in removing { variables[name] = nil }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        // An empty signal mask and default dispositions: the child must not inherit a test
        // thread's blocked SIGTERM (a signal watcher blocks it), or terminate() would wait in vain.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, &attributes, argv, envp)
        Glibc.close(pipeEnds[1])
        guard spawned == 0 else {
            Glibc.close(pipeEnds[0])
            throw Failure(description: "posix_spawn \(tool) failed: errno \(spawned)")
        }
        self.pid = pid
        output = pipeEnds[0]
    }

    deinit {
        terminate()
        Glibc.close(output)
        unlink(standardErrorPath)
    }

    /// The next line the child writes to standard output (without the newline); throws when the
    /// child closes its output or `timeout` passes first.
    public func readLine(timeout: Duration) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            guard let open = readMore(until: deadline) else {
                throw Failure(description: "no line within \(timeout); stderr: \(standardError)")
            }
            guard open else { throw Failure(description: "the child closed its output; stderr: \(standardError)") }
        }
    }

    /// What the child wrote to standard error so far.
    public var standardError: String { readWholeFile(standardErrorPath) }

    /// Waits for the child to exit; throws when it exits unsuccessfully or `timeout` passes (then
    /// it is killed).
    public func wait(timeout: Duration) throws {
        let status = try exitStatus(timeout: timeout)
        guard status == 0 else {
            throw Failure(description: "exited with status \(status); stderr: \(standardError)")
        }
    }

    /// Waits for the child to exit and returns its exit code (128 + the signal's number when a
    /// signal ended it, as a shell reports it); throws when `timeout` passes first (then it is killed).
    public func exitStatus(timeout: Duration) throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0 && errno != EINTR { throw Failure(description: "waitpid failed: errno \(errno)") }
            if ContinuousClock.now > deadline {
                terminate()
                throw Failure(description: "did not finish within \(timeout); stderr: \(standardError)")
            }
            usleep(20_000)
        }
        lock.withLock { exited = true }
        // WIFSIGNALED / WEXITSTATUS spelled out: the C macros are not imported.
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Everything the child writes to standard output until it closes it; throws when `timeout`
    /// passes first.
    public func readToEnd(timeout: Duration) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            guard let open = readMore(until: deadline) else {
                throw Failure(description: "output not closed within \(timeout); stderr: \(standardError)")
            }
            if !open { break }
        }
        defer { pending.removeAll() }
        return String(decoding: pending, as: UTF8.self)
    }

    /// Waits for output until `deadline` and appends what arrives to `pending`: true when bytes
    /// came, false when the child closed its output, nil when the deadline passed first.
    private func readMore(until deadline: ContinuousClock.Instant) -> Bool? {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(left.components.seconds * 1_000 + 10))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            pending.append(contentsOf: buffer[0..<count])
            return true
        }
    }

    /// Ends the child: SIGTERM, then SIGKILL if it has not exited within 5 s; reaps it. Idempotent.
    public func terminate() {
        guard lock.withLock({ !exited }) else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<250 {
            if waitpid(pid, &status, WNOHANG) == pid { return lock.withLock { exited = true } }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
        lock.withLock { exited = true }
    }

    /// Runs `tool` to completion and returns its standard output; throws with its standard error
    /// when it fails or takes longer than `timeout`.
    @discardableResult
    public static func run(
        _ tool: String, _ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(120)
    ) throws -> String {
        let child = try ChildProcess(launching: tool, arguments, environment: environment)
        var lines: [String] = []
        do {
            while true { lines.append(try child.readLine(timeout: timeout)) }
        } catch {
            // End of output (or the timeout, which wait() reports).
        }
        do {
            try child.wait(timeout: timeout)
        } catch {
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")): \(error)")
        }
        return lines.joined(separator: "\n")
    }
}

/// The file's bytes as UTF-8 text ("" when it cannot be opened). Plain read(2), not
/// `String(contentsOfFile:)`: FoundationEssentials' reader leaks its 4 KiB buffer on Linux for an
/// empty file (LeakSanitizer at the end of the ASan run; most children write nothing to stderr).
public func readWholeFile(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4_096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The package's root directory (where Package.swift is), found from this file's path.
public let packageRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }  // Sources/TestSupport/ChildProcess.swift
    return url.path
}()
