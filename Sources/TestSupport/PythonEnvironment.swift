import Foundation

/// The Python virtual environment the fake services in `Tests/Fakes` run in: `.build/python-venv`
/// with exactly the packages pinned in `Tests/Fakes/requirements.txt`, created on first use and
/// recreated when that file changes. Real servers for the tests (HTTP/2 + TLS, SMTP), never mocks.
///
/// Needs `python3` with the venv module (Debian: `python3-venv`) and PyPI (or a pip mirror) the
/// first time. One creation per machine: the work is serialised across processes by an exclusive
/// `flock` on `.build/python-venv.lock`, so parallel test processes wait for the first instead of
/// racing; within a process it runs once.
public enum PythonEnvironment {
    /// The venv's directory.
    public static let directory = packageRoot + "/.build/python-venv"
    /// The pinned requirements.
    public static let requirementsPath = packageRoot + "/Tests/Fakes/requirements.txt"
    /// How long `python3 -m venv` plus `pip install` may take before the set-up counts as failed.
    public static let setupTimeout: Duration = .seconds(900)

    /// The venv's interpreter, creating the venv first if needed (blocks; thread-safe).
    public static func python() throws -> String {
        try prepared.get()
    }

    /// The path of a file in `Tests/Fakes`.
    public static func fake(_ name: String) -> String {
        packageRoot + "/Tests/Fakes/" + name
    }

    private static let prepared = Result { () throws(ChildProcess.Failure) in try prepare() }

    /// The stamp that says which requirements the venv holds: a copy of the file installed from.
    private static var stampPath: String { directory + "/requirements.installed" }

    private static func prepare() throws(ChildProcess.Failure) -> String {
        let python = directory + "/bin/python"
        let requirements: String
        do {
            requirements = try String(contentsOfFile: requirementsPath, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: packageRoot + "/.build", withIntermediateDirectories: true)
        } catch {
            throw ChildProcess.Failure(description: "cannot read \(requirementsPath): \(error)")
        }
        let lock = open(packageRoot + "/.build/python-venv.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw ChildProcess.Failure(description: "cannot open the venv lock: errno \(errno)") }
        defer { close(lock) }  // releases the flock
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw ChildProcess.Failure(description: "flock failed: errno \(errno)") }
        }
        let installed = readWholeFile(stampPath)
        if installed == requirements && FileManager.default.isExecutableFile(atPath: python) { return python }

        let started = ContinuousClock.now
        do {
            try? FileManager.default.removeItem(atPath: directory)
            try ChildProcess.run("python3", ["-m", "venv", directory], timeout: setupTimeout)
            try ChildProcess.run(
                python, ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q", "-r", requirementsPath],
                timeout: setupTimeout)
            try requirements.write(toFile: stampPath, atomically: true, encoding: .utf8)
        } catch let failure as ChildProcess.Failure {
            throw failure
        } catch {
            throw ChildProcess.Failure(description: "creating \(directory): \(error)")
        }
        let took = ContinuousClock.now - started
        FileHandle.standardError.write(Data("PythonEnvironment: created \(directory) in \(took)\n".utf8))
        return python
    }
}
