import App
import Foundation
import Testing

/// docs/configuration.md's option tables are generated from `ServerOptions` (the declarations
/// `--help` and the parser read): a table edited by hand, or an option added without regenerating
/// the document, fails here. Regenerate with
/// `CHRONIR_WRITE_DOCS=1 swift test --filter ConfigurationDocumentTests`.
@Suite("Configuration — docs/configuration.md's tables are ServerOptions'")
struct ConfigurationDocumentTests {
    /// The repository's docs/configuration.md (this file is `Tests/AppTests/…`).
    static let documentPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/configuration.md").path

    static func begin(_ section: ServerOption.Section) -> String { "<!-- options: \(section.rawValue) -->\n" }
    static let end = "\n<!-- /options -->"

    /// `document` with each section's table replaced by the generated one; nil when a section's
    /// markers are missing.
    static func regenerated(_ document: String) -> String? {
        var result = document
        for section in ServerOption.Section.allCases {
            guard let begin = result.range(of: begin(section)),
                let end = result.range(of: end, range: begin.upperBound..<result.endIndex)
            else { return nil }
            result.replaceSubrange(begin.upperBound..<end.lowerBound, with: ServerOptions.markdownTable(section))
        }
        return result
    }

    @Test("every section's table is the generated one")
    func tablesAreGenerated() throws {
        let document = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let expected = try #require(Self.regenerated(document), "docs/configuration.md lacks a section's <!-- options: … --> markers")
        if ProcessInfo.processInfo.environment["CHRONIR_WRITE_DOCS"] == "1", expected != document {
            try expected.write(toFile: Self.documentPath, atomically: true, encoding: .utf8)
            return
        }
        #expect(
            expected == document,
            "docs/configuration.md's option tables differ from ServerOptions: regenerate them (see this suite's comment)")
    }

    @Test("every option is in the document once, under its section")
    func everyOptionListed() throws {
        let document = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        for option in ServerOptions.all {
            #expect(document.components(separatedBy: "| `\(option.flag)` | `\(option.environmentVariable)` |").count == 2, "\(option.flag)")
        }
        #expect(Set(ServerOptions.all.map(\.name)).count == ServerOptions.all.count, "an option is declared twice")
    }
}
