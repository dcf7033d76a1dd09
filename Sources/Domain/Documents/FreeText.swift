import Foundation

/// The one place user-supplied free text is checked and normalised, so that what one
/// member types cannot rewrite how another member's screen, terminal or log shows it. Every text
/// field names its `Kind`; the rules of a kind are:
///
/// | rule                    | `.name` (display/group names, alarm titles, sound ids) | `.note` (notes, descriptions) |
/// | ----------------------- | ------------------------------------------------------ | ----------------------------- |
/// | normalisation           | NFC, surrounding whitespace trimmed                     | NFC, CRLF → LF, trimmed       |
/// | C0/C1 controls, DEL     | rejected                                                | rejected except LF and tab    |
/// | line/paragraph separator| rejected                                                | rejected (send LF)            |
/// | bidi embeddings, overrides, isolates (U+202A–202E, U+2066–2069) | rejected       | rejected                      |
/// | other format characters (Unicode Cf: LRM/RLM, zero-width space/joiners, word joiner, BOM, soft hyphen, tags) | rejected, except a
/// joiner or tag inside an emoji sequence (👨‍👩‍👧, 🏴󠁧󠁢󠁳󠁣󠁴󠁿) | allowed (needed by bidi and Indic/Persian text) |
///
/// Lengths are checked by the caller after normalisation (`count` of the returned text).
public enum FreeText {
    /// What a field holds, and so which rules apply.
    public enum Kind: Sendable {
        /// One line shown in lists and headers: invisible characters could impersonate or reorder.
        case name
        /// Multi-line prose: newlines and tabs allowed, and the format characters real scripts need.
        case note
    }

    /// Why a text was refused; `message(field:)` words it for the error envelope.
    public enum Violation: Sendable, Equatable {
        /// A C0/C1 control character or DEL (other than LF/tab in a note).
        case controlCharacter(Unicode.Scalar)
        /// A line or paragraph separator (U+2028, U+2029).
        case lineSeparator(Unicode.Scalar)
        /// A bidi embedding, override or isolate (the "Trojan Source" set).
        case bidiControl(Unicode.Scalar)
        /// A zero-width or other invisible format character outside an emoji sequence.
        case invisibleCharacter(Unicode.Scalar)

        /// "`field` contains a control character (U+001B)".
        public func message(field: String) -> String {
            switch self {
            case .controlCharacter(let s): "\(field) contains a control character (\(Self.code(s)))"
            case .lineSeparator(let s): "\(field) contains a line separator (\(Self.code(s))); use a newline"
            case .bidiControl(let s): "\(field) contains a bidirectional override (\(Self.code(s)))"
            case .invisibleCharacter(let s): "\(field) contains an invisible character (\(Self.code(s)))"
            }
        }

        static func code(_ s: Unicode.Scalar) -> String {
            let hex = String(s.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
    }

    /// Normalises `raw` (NFC, line endings for notes, trimmed) and checks it against `kind`'s rules;
    /// throws `invalidField(field:…)` naming the first offending character. Empty results are the
    /// caller's to judge (required or optional).
    public static func normalize(_ raw: String, _ kind: Kind, field: String) throws(DomainError) -> String {
        var text = raw.precomposedStringWithCanonicalMapping
        if kind == .note, text.unicodeScalars.contains("\r") {
            text = text.replacingOccurrences(of: "\r\n", with: "\n")
        }
        text = text.trimmingWhitespace()
        if let violation = firstViolation(in: text, kind) {
            throw .invalidField(field: field, message: violation.message(field: field))
        }
        return text
    }

    /// The first character of `text` that `kind` does not allow, or nil.
    public static func firstViolation(in text: String, _ kind: Kind) -> Violation? {
        for character in text {
            let scalars = Array(character.unicodeScalars)
            for (index, scalar) in scalars.enumerated() {
                switch scalar.properties.generalCategory {
                case .control:
                    if kind == .note, scalar == "\n" || scalar == "\t" { continue }
                    return .controlCharacter(scalar)
                case .lineSeparator, .paragraphSeparator:
                    return .lineSeparator(scalar)
                case .format:
                    if isBidiControl(scalar) { return .bidiControl(scalar) }
                    if kind == .note { continue }
                    if insideEmojiSequence(scalars, at: index) { continue }
                    return .invisibleCharacter(scalar)
                default:
                    continue
                }
            }
        }
        return nil
    }

    /// U+202A–202E (LRE, RLE, PDF, LRO, RLO) and U+2066–2069 (LRI, RLI, FSI, PDI): they reorder the
    /// text that follows them, so a name or note could display as something it does not say.
    static func isBidiControl(_ s: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(s.value) || (0x2066...0x2069).contains(s.value)
    }

    /// A zero-width joiner or tag character that the grapheme rules joined into an emoji (the
    /// cluster starts with an emoji and the scalar is not its last): 👨‍👩‍👧, subdivision flags. A
    /// joiner between letters ends its cluster, so it is refused.
    static func insideEmojiSequence(_ cluster: [Unicode.Scalar], at index: Int) -> Bool {
        let s = cluster[index].value
        guard s == 0x200D || (0xE0020...0xE007F).contains(s), index > 0, let first = cluster.first,
            first.properties.isEmoji, first.value > 0x7F
        else { return false }
        return s == 0xE007F || index < cluster.count - 1
    }
}
