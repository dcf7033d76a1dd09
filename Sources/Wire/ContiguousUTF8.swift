extension Collection<UInt8> {
    /// Calls `body` with the bytes in contiguous memory: in place when the collection has them so (a
    /// native or small string's `utf8`, an array), else through a copy. The one way the HTTP writer,
    /// the log line and the logged path read a string's bytes without copying the `String`.
    @inlinable
    public func withContiguousBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try withContiguousStorageIfAvailable(body) { return result }
        return try Array(self).withUnsafeBufferPointer(body)
    }
}
