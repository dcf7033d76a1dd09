import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for tests: `initdb` in a temporary directory, `pg_ctl start` on a
/// free loopback port (Unix socket in the same directory), stopped and removed by `stop()`. Runs the
/// binaries as the `postgres` user through `runuser` when this process is root (PostgreSQL refuses
/// to run as root). A real server, never a mock.
public final class PostgresServer: @unchecked Sendable {
    /// Where Debian installs the server binaries (`postgresql-15`); the newest version wins.
    public static let binaryDirectory: String? = {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: "\(bin)/pg_ctl") { return bin }
        }
        return nil
    }()

    /// Whether tests that need PostgreSQL can run here. Under CI (`CI=true`) they must: a suite
    /// gated on this is enabled there even without binaries, so it fails instead of skipping.
    public static var isAvailable: Bool { binaryDirectory != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// How long one of initdb / pg_ctl / psql may run before the start counts as failed.
    public static let toolTimeoutSeconds = 120

    /// The connection URL for the superuser `chronir` on database `postgres`.
    public let url: String
    /// The port on 127.0.0.1.
    public let port: Int
    private let directory: String
    private let bin: String

    /// The start failed (what ran, and what it printed).
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Creates and starts a cluster. Blocks for about a second (initdb) plus start-up.
    public init() throws {
        guard let bin = Self.binaryDirectory else {
            throw StartError(description: "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)")
        }
        self.bin = bin
        (directory, port, url) = try Self.newPlace()
        try runAsServerUser(
            "\(bin)/initdb", ["-D", "\(directory)/data", "-U", "chronir", "-A", "trust", "-E", "UTF8", "--no-sync", "-N"])
        try start()
    }

    /// Where clusters live: in memory (/dev/shm) when it has `memoryDirectoryMinimumFree` bytes free,
    /// else the temporary directory. The shared cluster gets a database per test — about 9 MB of data
    /// and as much WAL each, gigabytes per run — and on a disk the tests waited for that I/O (writeback,
    /// and discards when the cluster is deleted): the PostgreSQL App suites' matrix alone took 51–145 s
    /// on disk and 36 s in memory on a 2-core machine. A test process that is killed leaves its
    /// cluster there, in memory, until it is deleted (`/dev/shm/chronir-pg-*`).
    static let baseDirectory: String = {
        var stats = statvfs()
        if statvfs("/dev/shm", &stats) == 0, access("/dev/shm", W_OK) == 0,
            UInt64(stats.f_bavail) * UInt64(stats.f_frsize) >= memoryDirectoryMinimumFree
        {
            return "/dev/shm"
        }
        return FileManager.default.temporaryDirectory.path
    }()

    /// The free memory /dev/shm must offer before clusters live there (a PostgreSQL App suite run
    /// peaks at a few gigabytes).
    static let memoryDirectoryMinimumFree: UInt64 = 12 << 30

    /// A new directory for a cluster (owned by the server user when running as root), a free port on
    /// loopback, and the URL a cluster there answers on.
    private static func newPlace() throws -> (directory: String, port: Int, url: String) {
        let base = baseDirectory
        let directory = "\(base)/chronir-pg-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            _ = try run("/bin/chown", ["postgres:postgres", directory])
        }
        let port = try freePort()
        return (directory, port, "postgresql://chronir@127.0.0.1:\(port)/postgres?sslmode=disable&connect_timeout=10")
    }

    /// A streaming standby of `primary` (`pg_basebackup -R -X stream`: a copy of its data directory
    /// that replays its WAL and refuses writes until `promote()`), started on a port of its own.
    /// The primary's default `pg_hba.conf` already trusts replication connections from 127.0.0.1.
    public static func standby(of primary: PostgresServer) throws -> PostgresServer {
        try PostgresServer(standbyOf: primary)
    }

    private init(standbyOf primary: PostgresServer) throws {
        bin = primary.bin
        (directory, port, url) = try Self.newPlace()
        try runAsServerUser(
            "\(bin)/pg_basebackup",
            ["-h", "127.0.0.1", "-p", "\(primary.port)", "-U", "chronir", "-D", "\(directory)/data", "-R", "-X", "stream", "--no-sync"])
        try start()
    }

    /// Promotes a standby to a primary (`pg_ctl promote -w`): returns once it accepts writes.
    public func promote() throws {
        try runAsServerUser("\(bin)/pg_ctl", ["-D", "\(directory)/data", "-w", "-t", "60", "promote"])
    }

    /// The machine dies: SIGKILL to the postmaster and every process it started, at once — no
    /// checkpoint, no goodbye to any client, WAL not yet streamed to a standby is lost. Returns once
    /// the postmaster is gone. `start()` would recover from the WAL (crash recovery).
    public func kill() throws {
        let (postmaster, children) = try processes()
        Foundation.kill(postmaster, SIGKILL)
        for child in children { Foundation.kill(child, SIGKILL) }
        var waited = 0
        // Gone, or a zombie its parent (init, which may not reap in a container) has not reaped yet.
        func alive() -> Bool {
            guard Foundation.kill(postmaster, 0) == 0 else { return errno != ESRCH }
            let stat = readWholeFile("/proc/\(postmaster)/stat")
            guard let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
        }
        while alive() {
            waited += 10
            if waited > Self.toolTimeoutSeconds * 1_000 { throw StartError(description: "postmaster \(postmaster) survived SIGKILL") }
            usleep(10_000)
        }
    }

    /// The machine stops answering but its kernel does not: SIGSTOP to the postmaster and every
    /// process it started, so connections stay open and their data is acknowledged by TCP while no
    /// answer ever comes (a hung server, or a proxy in front of a vanished one). `resume()` undoes it.
    public func pause() throws {
        let (postmaster, children) = try processes()
        for pid in [postmaster] + children { Foundation.kill(pid, SIGSTOP) }
    }

    /// SIGCONT to what `pause()` stopped.
    public func resume() throws {
        let (postmaster, children) = try processes()
        for pid in [postmaster] + children { Foundation.kill(pid, SIGCONT) }
    }

    /// The postmaster (from `postmaster.pid`) and the processes it started (backends, walsender,
    /// checkpointer…), read from /proc.
    private func processes() throws -> (postmaster: pid_t, children: [pid_t]) {
        let pidLine = readWholeFile("\(directory)/data/postmaster.pid").split(separator: "\n").first
        guard let pidLine, let postmaster = pid_t(pidLine) else {
            throw StartError(description: "no postmaster.pid in \(directory)/data: is the server running?")
        }
        var children: [pid_t] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry) else { continue }
            // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces, so split after ')'.
            let stat = readWholeFile("/proc/\(pid)/stat")
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { children.append(pid) }
        }
        return (postmaster, children)
    }

    /// How `pg_ctl stop` ends the server (https://www.postgresql.org/docs/15/app-pg-ctl.html).
    public enum ShutdownMode: String, Sendable {
        /// Open transactions are rolled back and every client is told 57P01 admin_shutdown before
        /// its connection closes; a checkpoint is written (an operator's `systemctl stop`).
        case fast
        /// Every server process is killed at once, as in a crash; the next start recovers from WAL.
        case immediate
    }

    /// Starts the server on this cluster's port and data directory — after `init` (which calls
    /// it) or again after `shutDown`; returns once it accepts connections.
    public func start() throws {
        // max_connections: the App suites on PostgreSQL run their tests at once, each harness with its
        // own database (a writer, two readers, a listener, sometimes a second handle): 353 tests peaked
        // at ≈ 1,000 backends (sampled with ps) and hit "too many clients" at 1,000. Idle backends cost
        // a few MB each; 4,000 leaves room for the suites to grow. Dynamic shared memory in files of the
        // data directory (mmap), not POSIX segments in /dev/shm that a killed cluster leaves behind.
        let options =
            "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=4000"
            + " -c dynamic_shared_memory_type=mmap"
        try runAsServerUser(
            "\(bin)/pg_ctl", ["-D", "\(directory)/data", "-o", options, "-l", "\(directory)/log", "-w", "-t", "60", "start"])
    }

    /// Stops the server in `mode` and waits until it is down, keeping its data: `start()` brings the
    /// same cluster back on the same port (an outage; `stop()` is the end of the test).
    public func shutDown(_ mode: ShutdownMode) throws {
        try runAsServerUser("\(bin)/pg_ctl", ["-D", "\(directory)/data", "-m", mode.rawValue, "-w", "-t", "60", "stop"])
    }

    /// Stops the server (immediate mode) and deletes its directory.
    public func stop() {
        _ = try? runAsServerUser("\(bin)/pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops (fast mode) and starts the server again on the same port and data: a restart.
    public func restart() throws {
        try runAsServerUser("\(bin)/pg_ctl", ["-D", "\(directory)/data", "-m", "fast", "-w", "restart"])
    }

    /// Runs one SQL script through `psql` as the superuser on `database` (for set-up and fault
    /// injection outside the code under test) and returns what it printed.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        let target = url.replacingOccurrences(of: "/postgres?", with: "/\(database)?")
        return try runAsServerUser("\(bin)/psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", target, "-c", sql])
    }

    @discardableResult
    private func runAsServerUser(_ tool: String, _ arguments: [String]) throws -> String {
        if getuid() == 0 {
            return try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", tool] + arguments)
        }
        return try Self.run(tool, arguments)
    }

    /// Runs `tool` and returns what it printed (stdout and stderr, through a temporary file).
    ///
    /// posix_spawn + waitpid rather than Foundation's `Process`: `pg_ctl start` leaves a daemon
    /// behind that inherits the spawner's descriptors, and `Process` never reported that `pg_ctl`
    /// had exited (its child stayed a zombie). waitpid on the child's pid cannot be fooled that way.
    private static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let outputPath = FileManager.default.temporaryDirectory.path + "/chronir-pg-run-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, tool, &actions, nil, argv, environ)
        guard spawned == 0 else { throw StartError(description: "posix_spawn \(tool) failed: errno \(spawned)") }
        var status: Int32 = 0
        var waited = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0 && errno != EINTR { throw StartError(description: "waitpid \(tool) failed: errno \(errno)") }
            waited += 10
            if waited > toolTimeoutSeconds * 1_000 {
                Foundation.kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw StartError(description: "\(tool) did not finish within \(toolTimeoutSeconds) s")
            }
            usleep(10_000)
        }
        let text = readWholeFile(outputPath)
        // WIFEXITED && WEXITSTATUS == 0, spelled out: the C macros are not imported.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw StartError(description: "\(tool) \(arguments.joined(separator: " ")) failed (wait status \(status)): \(text)")
        }
        return text
    }

    /// Ports handed to clusters by this process (never twice).
    private static let handedOut = Mutex<Set<Int>>([])

    /// A loopback TCP port for a cluster: nobody listens on it now, and it lies below the kernel's
    /// ephemeral range (`net.ipv4.ip_local_port_range`), so no outgoing connection is ever given it —
    /// a cluster stopped for an outage test gets its port back when it starts again. (A port from
    /// `bind(0)` is an ephemeral one: while the cluster was down, a test's client connection could
    /// take it as its local port and the restart failed, "could not bind".) Each port is handed out
    /// once per process.
    static func freePort() throws -> Int {
        let range = readWholeFile("/proc/sys/net/ipv4/ip_local_port_range")
        let ephemeralStart = range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
        let candidates = 10_000..<max(10_001, ephemeralStart)
        for _ in 0..<500 {
            let port = Int.random(in: candidates)
            guard handedOut.withLock({ $0.insert(port).inserted }), canListen(on: port) else { continue }
            return port
        }
        throw StartError(description: "no free loopback port in \(candidates)")
    }

    /// Whether a socket can bind 127.0.0.1:`port` now (then closed again).
    private static func canListen(on port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
