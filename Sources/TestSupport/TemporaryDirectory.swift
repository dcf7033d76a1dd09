import Foundation

/// A fresh, uniquely named directory under /tmp for one test's files (e.g. temporary databases).
/// It and everything in it is removed by `remove()` or when the object is released.
public final class TemporaryDirectory: Sendable {
    /// Absolute path of the directory.
    public let path: String

    /// Creates `/tmp/chronir-<prefix>-XXXXXX` with mkdtemp (mode 0700); traps if that fails.
    public init(prefix: String = "test") {
        var template = Array("/tmp/chronir-\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard let created else { fatalError("mkdtemp failed: errno \(errno)") }
        path = String(cString: created)
    }

    deinit {
        remove()
    }

    /// The path of `name` inside the directory (the file is not created).
    public func file(named name: String) -> String {
        path + "/" + name
    }

    /// Deletes the directory and its contents; safe to call more than once.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
