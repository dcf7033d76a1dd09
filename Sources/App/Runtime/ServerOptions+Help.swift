extension ServerOptions {
    /// `--help`'s option list: each section's options with their placeholder, help (Markdown made
    /// plain), default and variable, wrapped to `width` columns.
    public static func helpText(width: Int = 78) -> String {
        var lines: [String] = []
        for section in ServerOption.Section.allCases {
            let options = all.filter { $0.section == section }
            lines.append("")
            lines.append(section == .server ? "OPTIONS:" : "\(section.rawValue.uppercased()) OPTIONS:")
            for option in options {
                let head = "  " + option.flag + (option.valueName.map { " <\($0)>" } ?? "")
                let defaultText: String
                switch option.defaultValue {
                case .literal(let value): defaultText = value
                case .words(let words): defaultText = plain(words)
                }
                // "[env: NAME]" stays on one line (a no-break space while wrapping), so it can be grepped.
                let body = "\(plain(option.help)) (default: \(defaultText)) [env:\u{A0}\(option.environmentVariable)]"
                lines.append(head)
                lines.append(contentsOf: wrap(body, indent: 8, width: width).map { $0.replacing("\u{A0}", with: " ") })
            }
        }
        return lines.joined(separator: "\n")
    }

    /// docs/configuration.md's table of one section, as `ConfigurationDocumentTests` expects it
    /// between `<!-- options: SECTION -->` and `<!-- /options -->`.
    public static func markdownTable(_ section: ServerOption.Section) -> String {
        var lines = ["| flag | environment | default | meaning |", "|---|---|---|---|"]
        for option in all where option.section == section {
            let defaultCell: String
            switch option.defaultValue {
            case .literal(let value): defaultCell = "`\(value)`"
            case .words(let words): defaultCell = words
            }
            lines.append("| `\(option.flag)` | `\(option.environmentVariable)` | \(defaultCell) | \(option.help) |")
        }
        return lines.joined(separator: "\n")
    }

    /// Markdown made plain: code spans lose their backticks, links keep their text.
    static func plain(_ markdown: String) -> String {
        var result = ""
        var rest = Substring(markdown)
        while let open = rest.firstIndex(where: { $0 == "`" || $0 == "[" }) {
            result += rest[..<open]
            if rest[open] == "`" {
                rest = rest[rest.index(after: open)...]
                continue
            }
            // `[text](target)`: keep the text; a bracket that opens no link stays.
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "]"), rest.index(after: close) < rest.endIndex,
                rest[rest.index(after: close)] == "(", let end = rest[close...].firstIndex(of: ")")
            else {
                result.append("[")
                rest = rest[afterOpen...]
                continue
            }
            result += rest[afterOpen..<close]
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    /// `text` in lines of at most `width` columns (a longer word gets a line of its own), each
    /// indented by `indent` spaces.
    static func wrap(_ text: String, indent: Int, width: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, pad.count + line.count + 1 + word.count > width {
                lines.append(pad + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(pad + line) }
        return lines
    }
}
