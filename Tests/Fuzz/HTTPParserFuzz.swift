// libFuzzer harness for `HTTPRequestParser`. Built by `Tests/Fuzz/fuzz.sh http` with swiftc
// together with Sources/Wire/*.swift (so no `import Wire`: one module).
//
// Each input is parsed with the default limits and with small ones (so the limit paths are reached
// by short inputs), each fed four ways: whole, one byte at a time, in two halves, and in chunks of
// input-derived sizes. Invariants, any breach of which traps (a crash for libFuzzer):
// - every split yields the same transcript (events and the final error, reason included);
// - `.request` (or a streamed body's `.bodyChunk`s and `.bodyEnd`, recorded as the same line with the
//   chunks joined, so splits compare) follows exactly one `.head` and carries the same head; no event after a throw,
//   and a dead parser rethrows the same error even after more input;
// - bodies, field counts and targets stay within the limits; statuses are the documented ones;
// - `state` and `bufferedByteCount` agree with the events; `takeBufferedBytes` returns exactly
//   the unconsumed suffix of the input.

let smallLimits: HTTPLimits = {
    var limits = HTTPLimits(
        maxRequestLineBytes: 64, maxHeaderBlockBytes: 128, maxHeaderFields: 4, maxBodyBytes: 64,
        maxChunkExtensionBytes: 16, maxLeadingEmptyLines: 2)
    // `POST /u/<any>` streams its body (`.bodyChunk`s, `.bodyEnd`) under its own limit.
    limits.uploadPaths = ["/u/*"]
    limits.maxUploadBodyBytes = 48
    return limits
}()

let allowedStatuses: Set<Int> = [400, 413, 414, 417, 431, 501, 505]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    for limits in [HTTPLimits(), smallLimits] {
        let whole = transcript(input, chunkSizes: [size], limits: limits)
        let patterns: [(String, [Int])] = [
            ("one byte at a time", Array(repeating: 1, count: size)),
            ("halves", [size / 2, size - size / 2]),
            ("derived", derivedChunkSizes(input)),
        ]
        for (name, sizes) in patterns {
            let other = transcript(input, chunkSizes: sizes, limits: limits)
            if other != whole {
                fatalError("split '\(name)' disagrees:\n  whole: \(whole)\n  \(name): \(other)")
            }
        }
    }
    return 0
}

func describe(_ head: HTTPRequestHead) -> String {
    let fields = head.headers.map { "\($0.name):\($0.value)" }.joined(separator: "|")
    return "\(head.method) \(head.target) \(head.version) [\(fields)] ka=\(head.keepAlive) ec=\(head.expectsContinue)"
}

/// Feeds `input` in chunks of `chunkSizes`, draining events after each, checking invariants.
func transcript(_ input: [UInt8], chunkSizes: [Int], limits: HTTPLimits) -> [String] {
    var parser = HTTPRequestParser(limits: limits)
    var records: [String] = []
    var openHead: String?
    var streamedHead: HTTPRequestHead?
    var streamed: [UInt8] = []
    var failure: HTTPParseError?
    var offset = 0

    feeding: for length in chunkSizes {
        let end = min(offset + length, input.count)
        input[offset..<end].withUnsafeBytes { parser.append($0) }
        offset = end
        while true {
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                check(allowedStatuses.contains(error.status.code), "unexpected status \(error.status)")
                check(!error.reason.isEmpty, "empty reason")
                failure = error
                records.append("error \(error.status.code) \(error.reason)")
                break feeding
            }
            guard let event else { break }
            check(parser.bufferedByteCount >= 0 && parser.bufferedByteCount <= offset, "bufferedByteCount out of range")
            switch event {
            case .head(let head):
                check(openHead == nil, ".head twice without .request")
                check(parser.state == .body, ".head must leave the parser in .body")
                check(head.headers.count <= limits.maxHeaderFields, "too many fields")
                check(head.target.utf8.count <= limits.maxRequestLineBytes, "target over the limit")
                let text = describe(head)
                openHead = text
                check(head.streamsBody == limits.isUpload(head), "streamsBody disagrees with the limits")
                if head.streamsBody { streamedHead = head }
                records.append("head \(text)")
            case .request(let request):
                let text = describe(request.head)
                check(openHead == text, ".request without its .head")
                check(!request.head.streamsBody, ".request for a streamed body")
                check(request.body.count <= limits.maxBodyBytes, "body over the limit")
                check(
                    parser.state == (parser.bufferedByteCount == 0 ? .idle : .head),
                    "state after .request disagrees with the buffer")
                openHead = nil
                records.append("request \(text) body=\(request.body)")
            case .bodyChunk(let bytes):
                check(streamedHead != nil && parser.state == .body, ".bodyChunk outside a streamed body")
                check(!bytes.isEmpty, "empty .bodyChunk")
                streamed += bytes
                check(streamed.count <= limits.maxUploadBodyBytes, "streamed body over the limit")
            case .bodyEnd:
                guard let head = streamedHead else { fatalError(".bodyEnd outside a streamed body") }
                let text = describe(head)
                check(openHead == text, ".bodyEnd without its .head")
                check(
                    parser.state == (parser.bufferedByteCount == 0 ? .idle : .head),
                    "state after .bodyEnd disagrees with the buffer")
                openHead = nil
                streamedHead = nil
                records.append("request \(text) body=\(streamed)")
                streamed = []
            }
        }
    }

    if let failure {
        check(parser.bufferedByteCount == 0, "dead parser keeps bytes")
        parser.append([0x47, 0x45, 0x54, 0x20])
        do {
            let event = try parser.next()
            fatalError("event after a throw: \(String(describing: event))")
        } catch {
            check(error == failure, "a dead parser must rethrow its error")
        }
    } else {
        let count = parser.bufferedByteCount
        let rest = parser.takeBufferedBytes()
        check(rest.count == count && rest[...] == input.suffix(count), "takeBufferedBytes is not the unconsumed suffix")
        check(parser.state == .idle && parser.bufferedByteCount == 0, "takeBufferedBytes must reset to .idle")
    }
    return records
}
