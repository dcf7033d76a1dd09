import Domain
import Foundation

/// Prints rows as an aligned text table with a header line.
func printTable(_ header: [String], _ rows: [[String]]) {
    var widths = header.map(\.count)
    for row in rows {
        for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
    }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { i, cell in
            i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }
    print(line(header))
    for row in rows { print(line(row)) }
    if rows.isEmpty { print("(none)") }
}

/// Prints a value as JSON (the API's document encoding).
func printJSON(_ value: some Encodable) {
    print(String(decoding: DocumentCoding.encode(value), as: UTF8.self))
}
