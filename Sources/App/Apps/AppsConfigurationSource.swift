import Foundation
public import Logging
import Synchronization

/// The current `AppsConfiguration`: read from its file at start-up (a bad file stops start-up) and
/// again on `reload()` (SIGHUP), where a bad file is logged and the previous configuration stays.
public final class AppsConfigurationSource: Sendable {
    /// The JSON file (`--app-config-file`); nil: the empty configuration, never reloaded.
    public let file: String?
    private let state: Mutex<AppsConfiguration>

    /// Most bytes read from the file: a configuration of a few flags and ids is a few KiB.
    public static let maxFileBytes = 64 * 1024

    /// Reads `file` now (throws `AppsConfiguration.Invalid` for a missing, oversized or malformed file).
    public init(file: String?) throws(AppsConfiguration.Invalid) {
        self.file = file
        state = Mutex(try file.map(Self.read) ?? AppsConfiguration())
    }

    /// A fixed configuration (tests; no file).
    public init(_ configuration: AppsConfiguration = AppsConfiguration()) {
        file = nil
        state = Mutex(configuration)
    }

    /// The configuration requests see now.
    public var current: AppsConfiguration { state.withLock { $0 } }

    /// Reads the file again; on success the new configuration applies to the next request, on failure
    /// the old one stays and the error is logged. Returns whether it changed anything.
    @discardableResult
    public func reload(logger: Logger) -> Bool {
        guard let file else { return false }
        do {
            let fresh = try Self.read(file)
            let changed = state.withLock { current in
                defer { current = fresh }
                return current != fresh
            }
            logger.notice("app configuration reloaded", metadata: ["file": "\(file)", "changed": "\(changed)"])
            return changed
        } catch {
            logger.error("app configuration not reloaded; the previous one stays", metadata: ["file": "\(file)", "error": "\(error)"])
            return false
        }
    }

    private static func read(_ path: String) throws(AppsConfiguration.Invalid) -> AppsConfiguration {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw AppsConfiguration.Invalid(description: "cannot read the app configuration file \(path)")
        }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maxFileBytes + 1) ?? Data() else {
            throw AppsConfiguration.Invalid(description: "cannot read the app configuration file \(path)")
        }
        guard data.count <= maxFileBytes else {
            throw AppsConfiguration.Invalid(description: "\(path) is over \(maxFileBytes) bytes")
        }
        do { return try AppsConfiguration.parse(Array(data)) } catch {
            throw AppsConfiguration.Invalid(description: "\(path): \(error.description)")
        }
    }
}
