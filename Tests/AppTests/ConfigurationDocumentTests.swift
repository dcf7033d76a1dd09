import App
import Foundation
import Testing

/// docs/configuration.md's flag table shows the defaults `AppConfig.Defaults` holds (the source
/// ChronirServer.swift's fallbacks and `--help` read): a default changed in code without the doc, or in the
/// doc without the code, fails here.
@Suite("Configuration — docs/configuration.md matches AppConfig.Defaults")
struct ConfigurationDocumentTests {
    /// The repository's docs/configuration.md (this file is `Tests/AppTests/…`).
    static let documentPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/configuration.md").path

    /// One row of the `chronir-server` table: `| `--flag` | `CHRONIR_…` | default | meaning |`.
    struct Row: Equatable {
        var flag: String
        var environment: String
        /// The default cell's text, without backticks when the whole cell is one code span.
        var defaultValue: String
        /// Whether the default cell is one code span (a literal), not words.
        var isLiteral: Bool
    }

    /// The flag rows of the document's tables, in order.
    static func rows(in document: String) -> [Row] {
        document.split(separator: "\n").compactMap { line -> Row? in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            // "| a | b | c | d |" splits into ["", a, b, c, d, ""].
            guard cells.count == 6, cells[1].hasPrefix("`--") else { return nil }
            func code(_ cell: String) -> String? {
                guard cell.count >= 2, cell.hasPrefix("`"), cell.hasSuffix("`") else { return nil }
                let inner = cell.dropFirst().dropLast()
                return inner.contains("`") ? nil : String(inner)
            }
            guard let flag = code(cells[1]), let environment = code(cells[2]) else { return nil }
            let literal = code(cells[3])
            return Row(flag: flag, environment: environment, defaultValue: literal ?? cells[3], isLiteral: literal != nil)
        }
    }

    @Test("every literal default in the table is AppConfig.Defaults', and every one of those is in the table")
    func defaultsMatch() throws {
        let rows = Self.rows(in: try String(contentsOfFile: Self.documentPath, encoding: .utf8))
        #expect(rows.count >= 25)  // the whole table, not a parse that found nothing
        let literal = Dictionary(
            rows.filter(\.isLiteral).map { ($0.flag, $0.defaultValue) }, uniquingKeysWith: { first, _ in first })
        for (flag, value) in AppConfig.Defaults.documented.sorted(by: { $0.key < $1.key }) {
            #expect(
                literal[flag] == value,
                "docs/configuration.md shows \(flag)'s default as \(literal[flag] ?? "no literal"), AppConfig.Defaults has \(value)")
        }
        let undocumented = Set(literal.keys).subtracting(AppConfig.Defaults.documented.keys).sorted()
        #expect(
            undocumented.isEmpty, "literal defaults in docs/configuration.md that AppConfig.Defaults does not hold: \(undocumented)")
        for row in rows {
            let expected = "CHRONIR_" + row.flag.dropFirst(2).uppercased().replacingOccurrences(of: "-", with: "_")
            #expect(row.environment == expected, "\(row.flag)'s variable is \(expected), the doc says \(row.environment)")
        }
    }

    @Test("the table parser reads literals, words and the variable")
    func parser() {
        let rows = Self.rows(
            in: """
                | flag | environment | default | meaning |
                |---|---|---|---|
                | `--port` | `CHRONIR_PORT` | `8080` | TCP port |
                | `--loops` | `CHRONIR_LOOPS` | active processors | event loops |
                not a row | `--x` |
                """)
        #expect(
            rows == [
                Row(flag: "--port", environment: "CHRONIR_PORT", defaultValue: "8080", isLiteral: true),
                Row(flag: "--loops", environment: "CHRONIR_LOOPS", defaultValue: "active processors", isLiteral: false),
            ])
    }
}
