/// A response to serialise. `Content-Length`, `Date` and `Connection` are added by the writer;
/// handlers set only their own fields.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// A body the transport sends from an open file after the head, instead of `body` (which must then
    /// be empty): a download never holds the file in memory (docs/attachments.md#storage).
    public var bodyFile: HTTPFileRegion?

    public init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], bodyFile: HTTPFileRegion? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyFile = bodyFile
    }

    /// The length of the body: `bodyFile`'s when there is one.
    public var bodyCount: Int { bodyFile.map { Int($0.count) } ?? body.count }
}

/// `count` bytes from `offset` of an open file, sent by the transport as a response body. The
/// descriptor is owned: `release` (given by whoever opened it: it closes it) runs when the last
/// reference goes — after the bytes were sent, or when the response was never sent.
public final class HTTPFileRegion: Sendable {
    /// An open, readable file descriptor.
    public let descriptor: Int32
    public let offset: Int64
    public let count: Int64
    private let release: @Sendable (Int32) -> Void

    public init(descriptor: Int32, offset: Int64, count: Int64, release: @escaping @Sendable (Int32) -> Void) {
        self.descriptor = descriptor
        self.offset = offset
        self.count = count
        self.release = release
    }

    deinit { release(descriptor) }
}
