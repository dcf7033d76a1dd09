import Testing

@testable import App

/// `Range: bytes=…` (RFC 9110 §14.1.2) against a 100-byte file.
@Suite("ByteRange — one range, suffix, open end, unsatisfiable, ignored")
struct ByteRangeTests {
    @Test func ranges() {
        #expect(ByteRange.resolve(nil, length: 100) == .whole)
        #expect(ByteRange.resolve("bytes=0-0", length: 100) == .partial(ByteRange(first: 0, last: 0)))
        #expect(ByteRange.resolve("bytes=10-19", length: 100) == .partial(ByteRange(first: 10, last: 19)))
        #expect(ByteRange.resolve("bytes=90-500", length: 100) == .partial(ByteRange(first: 90, last: 99)))
        #expect(ByteRange.resolve("bytes=99-", length: 100) == .partial(ByteRange(first: 99, last: 99)))
        #expect(ByteRange.resolve("bytes=-1", length: 100) == .partial(ByteRange(first: 99, last: 99)))
        #expect(ByteRange.resolve("bytes=-500", length: 100) == .partial(ByteRange(first: 0, last: 99)))
        #expect(ByteRange.resolve("bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRange.resolve("bytes=-0", length: 100) == .unsatisfiable)
        // Ignored (the whole file): several ranges, other units, malformed, reversed, absurdly long numbers.
        for header in ["bytes=0-1,5-6", "items=0-1", "bytes=a-b", "bytes=5-1", "bytes=-", "bytes=1234567890123456789-"] {
            #expect(ByteRange.resolve(header, length: 100) == .whole, "\(header)")
        }
    }
}
