import Domain
import Foundation
import Logging
import Testing

@testable import App

@Suite("Log sink — lines formatted in place, time stamps per second, cut at the line limit")
struct LogSinkTests {
    /// Runs `body` with a sink writing into a temporary file, flushes, and returns the lines it wrote.
    func capture(_ body: (LogSink) -> Void) -> [String] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("logsink-\(UUID().uuidString)").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        let sink = LogSink(fd: fd)
        body(sink)
        sink.flush()
        let output = FileManager.default.contents(atPath: path) ?? Data()
        return String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map(String.init)
    }

    func line(
        _ sink: LogSink, format: LogFormat, at milliseconds: Int64, level: Logger.Level = .info, message: String = "request",
        _ fields: (inout LogLine) -> Void = { _ in }
    ) {
        sink.append(urgent: false) { buffer in
            var line = LogLine(
                format: format, timeMilliseconds: milliseconds, level: level, logger: "chronir.test", message: message, in: &buffer)
            fields(&line)
            line.finish(into: &buffer)
        }
    }

    @Test("text and JSON layouts, byte for byte")
    func layouts() {
        let at: Int64 = 1_795_675_282_924  // 2026-11-26T06:41:22.924Z
        let lines = capture { sink in
            line(sink, format: .text, at: at) { line in
                line.field("method", "GET")
                line.field("path", "/v1/me"[...])
                line.field("route", "")
                line.field("status", 200)
                line.field("delta", -42)
                line.field("note", "two words")
            }
            line(sink, format: .json, at: at, level: .warning, message: "say \"hi\"") { line in
                line.field("path", "/a b")
                line.field(named: "n", 3)
                line.field(named: "list", json: "[1,2]")
            }
        }
        #expect(
            lines == [
                #"2026-11-26T06:41:22.924Z INFO chronir.test: request method=GET path=/v1/me route="" status=200"#
                    + #" delta=-42 note="two words""#,
                #"{"ts":"2026-11-26T06:41:22.924Z","level":"warning","logger":"chronir.test","msg":"say \"hi\"","#
                    + #""path":"/a b","n":3,"list":[1,2]}"#,
            ])
    }

    @Test("the time stamp equals Timestamp.format across second, day and epoch boundaries")
    func timestamps() {
        let instants: [Int64] = [
            1_795_675_282_924, 1_795_675_282_999, 1_795_675_283_000, 1_795_675_283_001, 1_795_675_282_000,
            1_767_225_599_999, 1_767_225_600_000, 0, -1, -1000, -1001,
        ]
        let lines = capture { sink in
            for at in instants { line(sink, format: .text, at: at) }
        }
        #expect(lines.map { String($0.prefix { $0 != " " }) } == instants.map(Timestamp.format))
    }

    @Test("a line of exactly maxLineBytes is kept whole; one byte more is cut and marked")
    func lineLimit() throws {
        let head = "2026-11-26T06:41:22.924Z INFO chronir.test: request"
        let atLimit = String(repeating: "x", count: LogSink.maxLineBytes - head.utf8.count)
        let lines = capture { sink in
            line(sink, format: .text, at: 1_795_675_282_924, message: "request" + atLimit)
            line(sink, format: .text, at: 1_795_675_282_924, message: "request" + atLimit + "yz")
        }
        try #require(lines.count == 2)
        #expect(lines[0] == head + atLimit)
        #expect(lines[1] == head + atLimit + "…[truncated]")
    }

    @Test("lines past the flush threshold all arrive, in order, and flush() leaves nothing behind")
    func order() {
        let count = 3000  // ≈ 3 × 64 KiB of lines: queued writes, then the final flush
        let lines = capture { sink in
            for n in 0..<count { line(sink, format: .text, at: 1_795_675_282_924) { $0.field("n", n) } }
        }
        #expect(lines.count == count)
        #expect(lines.map { $0.split(separator: "=").last.map(String.init) ?? "" } == (0..<count).map(String.init))
    }
}
