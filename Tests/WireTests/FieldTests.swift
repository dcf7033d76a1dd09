import Testing
import Wire

@Suite("RFC 9112 §5: field syntax")
struct FieldTests {
    @Test func valuesLoseSurroundingWhitespaceOnly() {
        let input = bytes("GET / HTTP/1.1\r\nHost: a\r\nX-A:   v  v \t\r\nX-Empty:\r\nX-Tab:\tx\ty\t\r\n\r\n")
        expectAtEverySplit(input, Event.exchange(.get("/", ["Host: a", "X-A: v  v", "X-Empty: ", "X-Tab: x\ty"])))
    }

    @Test func repeatedFieldsKeepArrivalOrderAndNamesCompareCaseInsensitively() throws {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET / HTTP/1.1\r\nhost: a\r\nX-Rep: 1\r\nx-other: o\r\nX-REP: 2\r\n\r\n"))
        guard case .head(let head)? = try parser.next() else {
            Issue.record("expected .head")
            return
        }
        #expect(head.headers[all: "x-rep"] == ["1", "2"])
        #expect(head.headers[first: "HOST"] == "a")
        #expect(head.headers.map(\.name) == ["host", "X-Rep", "x-other", "X-REP"])
    }

    @Test func obsTextIsDecodedAsUTF8() {
        var input = bytes("GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf")
        input += [0xC3, 0xA9, 0x20, 0xFF] + bytes("\r\n\r\n")
        expectAtEverySplit(input, Event.exchange(.get("/", ["Host: a", "X-Name: café \u{FFFD}"])))
    }

    @Test(
        "malformed field lines are 400",
        arguments: [
            "Host : a",  // whitespace before the colon
            "Host\t: a",
            "Host: a\r\n folded",  // obs-fold
            "Host: a\r\n\tfolded",
            " X: leading whitespace",  // whitespace before the first field (§2.2)
            ": empty-name",
            "NoColon",
            "X@Y: bad name",
            "Ünicode: name",
            "X: nul\0inside",
            "X: bare\rCR",
            "X: del\u{7F}",
            "X: ctl\u{01}",
            "X: esc\u{1B}",
        ])
    func malformedField(_ field: String) {
        let host = field.hasPrefix("Host") ? "" : "Host: a\r\n"
        expectAtEverySplit(bytes("GET / HTTP/1.1\r\n\(host)\(field)\r\n\r\n"), [.error(400)])
    }

    @Test(
        "a CTL is refused and other bytes accepted at every position of a value",
        arguments: [UInt8(0x00), 0x01, 0x0D, 0x1B, 0x1F, 0x7F, 0x09, 0x20, 0x21, 0x7E, 0x80, 0xFF])
    func valueByteAtEveryPosition(_ byte: UInt8) {
        let allowed = byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
        for position in 0..<24 {
            var value = [UInt8](repeating: 0x76, count: 24)
            value[position] = byte
            var parser = HTTPRequestParser()
            parser.append(bytes("GET / HTTP/1.1\r\nHost: a\r\nX: ") + value + bytes("\r\n\r\n"))
            let events = drain(&parser)
            if allowed {
                #expect(events.count == 2, "byte \(byte) at \(position)")
            } else {
                #expect(events == [.error(400)], "byte \(byte) at \(position)")
            }
        }
    }

    @Test func hostIsRequiredOnceInHTTP11() {
        expectAtEverySplit(bytes("GET / HTTP/1.1\r\nX: y\r\n\r\n"), [.error(400)])
        expectAtEverySplit(bytes("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), [.error(400)])
        expectAtEverySplit(bytes("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"), [.error(400)])
        expectAtEverySplit(bytes("GET / HTTP/1.1\r\nHost:\r\n\r\n"), Event.exchange(.get("/", ["Host: "])))
    }
}
