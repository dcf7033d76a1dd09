import App
import Foundation
import Testing

/// deploy/chronir.env.example lists every environment variable `--help` documents (the
/// `ServerOptions` table), each on a line of its own as `NAME=value` or commented out as `#NAME=value`,
/// and no variable the table does not have: an option added without its line, or one removed while its
/// line stays, fails here.
@Suite("Deploy — deploy/chronir.env.example lists ServerOptions' variables")
struct DeployEnvironmentExampleTests {
    /// The repository's deploy/chronir.env.example (this file is `Tests/AppTests/…`).
    static let examplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/chronir.env.example").path

    /// The variable names the example's lines set, commented out or not.
    static func listed(in text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let body = line.hasPrefix("#") ? line.dropFirst() : line[...]
            guard body.hasPrefix("CHRONIR_"), let equals = body.firstIndex(of: "=") else { return nil }
            return String(body[..<equals])
        }
    }

    @Test("every variable of --help has a line, and every line names one")
    func everyVariableListed() throws {
        let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        let listed = Set(Self.listed(in: text))
        let documented = Set(ServerOptions.all.map(\.environmentVariable))
        let help = ServerOptions.helpText(width: 10_000)
        for name in documented.sorted() {
            #expect(help.contains("[env: \(name)]"), "\(name) is not in --help")
            #expect(listed.contains(name), "deploy/chronir.env.example has no line for \(name)")
        }
        for name in listed.subtracting(documented).sorted() {
            Issue.record("deploy/chronir.env.example sets \(name), which no option reads")
        }
    }

    @Test("the parser reads lines as the check means them")
    func parserReadsLines() {
        let text = "CHRONIR_PORT=8080\n#CHRONIR_LOOPS=2\n# CHRONIR_HOST is explained\nOTHER=1"
        #expect(Self.listed(in: text) == ["CHRONIR_PORT", "CHRONIR_LOOPS"])
    }
}
