import TestSupport
import Testing
import Wire

@Suite("RFC 6455 §8.1 UTF-8 validation")
struct UTF8ValidatorTests {
    static let valid: [[UInt8]] = [
        [], Array("Hello-µ@ßöäüàá-UTF-8!!".utf8), [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80],
        [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80],
        [0xF4, 0x8F, 0xBF, 0xBF], Array("κόσμε".utf8),
    ]

    static let invalid: [[UInt8]] = [
        [0x80],  // lone continuation
        [0xC0, 0xAF], [0xC1, 0xBF],  // overlong 2-byte
        [0xE0, 0x80, 0xAF], [0xE0, 0x9F, 0xBF],  // overlong 3-byte
        [0xF0, 0x80, 0x80, 0xAF], [0xF0, 0x8F, 0xBF, 0xBF],  // overlong 4-byte
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],  // surrogates U+D800, U+DFFF
        [0xF4, 0x90, 0x80, 0x80],  // U+110000
        [0xF5, 0x80, 0x80, 0x80], [0xFE], [0xFF],
        [0xC2, 0x41], [0xE1, 0x80, 0x41],  // a non-continuation inside a sequence
    ]

    @Test(arguments: valid)
    func validSequencesPassAtEverySplit(bytes: [UInt8]) {
        for split in ChunkFeeder.splits(of: bytes) {
            var validator = UTF8Validator()
            for chunk in split.chunks {
                let ok = validator.validate(chunk)
                #expect(ok, "\(split)")
            }
            #expect(validator.isComplete, "\(split)")
        }
    }

    @Test(arguments: invalid)
    func invalidSequencesFail(bytes: [UInt8]) {
        var validator = UTF8Validator()
        let first = validator.validate(bytes)
        #expect(!first)
        #expect(!validator.isComplete)
        let sticky = validator.validate([0x41])
        #expect(!sticky)
    }

    @Test func truncatedSequenceIsNotComplete() {
        var validator = UTF8Validator()
        let head = validator.validate([0x41, 0xF0, 0x9F, 0x98])
        #expect(head)
        #expect(!validator.isComplete)
        let tail = validator.validate([0x80])
        #expect(tail)
        #expect(validator.isComplete)
    }

    @Test func failsAtTheFirstInvalidByteEvenInALongAsciiRun() {
        var validator = UTF8Validator()
        let ok = validator.validate([UInt8](repeating: 0x61, count: 37) + [0xC0] + [UInt8](repeating: 0x61, count: 20))
        #expect(!ok)
    }
}

@Suite("RFC 6455 §5.4 Fragmentation and §8.1 text messages")
struct WebSocketMessageTests {
    @Test func validSequenceSplitAcrossFragmentsPasses() {
        let smiley: [UInt8] = [0xF0, 0x9F, 0x98, 0x80]  // U+1F600
        for cut in 1..<4 {
            let input =
                WS.frame(.text, Array(smiley[..<cut]), fin: false) + WS.frame(.continuation, Array(smiley[cut...]))
            #expect(WS.run(input) == [.deliver(.text("\u{1F600}"))], "cut at \(cut)")
        }
        let perByte =
            WS.frame(.text, [0xCE], fin: false) + WS.frame(.continuation, [0xBA], fin: false)
            + WS.frame(.continuation, [], fin: false) + WS.frame(.continuation, [0xE1, 0xBD], fin: false)
            + WS.frame(.continuation, [0xB9])
        #expect(WS.run(perByte) == [.deliver(.text("κό"))])
    }

    @Test func invalidTextIs1007() {
        #expect(WS.run(WS.frame(.text, [0xED, 0xA0, 0x80])) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
    }

    @Test func invalidUTF8FailsFastBeforeTheMessageEnds() {
        // The first fragment is already invalid: fail without waiting for the rest.
        let input = WS.frame(.text, [0x61, 0xC0, 0x80], fin: false)
        #expect(WS.run(input) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
        let later = WS.frame(.text, [0x61], fin: false) + WS.frame(.continuation, [0xF4, 0x90], fin: false)
        #expect(WS.run(later) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
    }

    @Test func invalidUTF8FailsFastInsideAFrameStillArriving() {
        // Autobahn 6.4.x: the frame is announced as 100 bytes; the invalid byte is in its first 6.
        let frame = WS.frame(.text, Array("hello".utf8) + [0xC0] + [UInt8](repeating: 0x61, count: 94))
        var proto = WebSocketProtocol()
        #expect(WS.drain(&proto, Array(frame[..<9])) == [])  // header + "hel"
        #expect(WS.drain(&proto, Array(frame[9..<12])) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
        // In a continuation, and with a sequence split across the prefix boundary.
        var second = WebSocketProtocol()
        let input =
            WS.frame(.text, [0xCE], fin: false) + WS.frame(.continuation, [0xBA, 0xE1, 0xBD, 0xB9] + [UInt8](repeating: 0x62, count: 50))
        let cut = input.count - 40
        #expect(WS.drain(&second, Array(input[..<cut])) == [])
        #expect(WS.drain(&second, Array(input[cut...])) == [.deliver(.text("κό" + String(repeating: "b", count: 50)))])
        var third = WebSocketProtocol()
        let bad = WS.frame(.text, [0xCE], fin: false) + WS.frame(.continuation, [0x41] + [UInt8](repeating: 0x62, count: 50))
        #expect(WS.drain(&third, Array(bad[..<(bad.count - 40)])) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
    }

    @Test func sequenceTruncatedAtTheFinalFragmentIs1007() {
        let input = WS.frame(.text, [0x61], fin: false) + WS.frame(.continuation, [0xF0, 0x9F, 0x98])
        #expect(WS.run(input) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
        #expect(WS.run(WS.frame(.text, [0xE2, 0x82])) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
    }

    @Test func binaryMessagesAreNotValidated() {
        #expect(WS.run(WS.frame(.binary, [0xFF, 0xC0])) == [.deliver(.binary([0xFF, 0xC0]))])
    }

    @Test func messagesAfterMessages() {
        let input = WS.text("one") + WS.text("tw", fin: false) + WS.frame(.continuation, Array("o".utf8)) + WS.text("three")
        #expect(WS.run(input) == [.deliver(.text("one")), .deliver(.text("two")), .deliver(.text("three"))])
    }
}
