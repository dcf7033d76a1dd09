import Foundation

/// The email-address policy (docs/mail.md#addresses): one canonical spelling per mailbox
/// as far as the server can tell, and no address that looks like another one.
///
/// 1. Trimmed; NFC; case-folded (Unicode full case folding, then NFC again) — `Ana@Example.COM` and
///    `ana@example.com` are one account.
/// 2. Refused: controls, bidirectional controls, invisible and other format characters (zero-width
///    space, joiners, soft hyphen) — `FreeText`'s `.name` rules.
/// 3. Refused: compatibility characters — anything NFKC would change, such as fullwidth `ａ` or the
///    `ﬁ` ligature. A mail server does not fold them, so `ａna@` is another mailbox that looks like `ana@`.
/// 4. Confusables: every letter of the local part, and of each domain label, comes from one script
///    (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, Devanagari, Thai, Hangul, or Han with Kana);
///    a letter of another script, or a mix (`puppet-mаil` with a Cyrillic `а`), is refused. Digits and
///    `. - _ +` go with any script. Not caught: a whole-script confusable (an all-Cyrillic `аре` that
///    looks like Latin `ape`) — it is a different mailbox, and because invitations match the exact
///    address and need it verified, it can only ever act as itself.
public enum EmailAddress {
    /// A script the confusable check tells apart.
    enum Script: Equatable {
        case latin, greek, cyrillic, armenian, hebrew, arabic, devanagari, thai, hangul, cjk
    }

    /// The canonical form of `raw`, or the `invalidField(email)` error saying what is wrong.
    static func canonical(_ raw: String, field: String = "email") throws(DomainError) -> String {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if let violation = FreeText.firstViolation(in: trimmed, .name) {
            throw .invalidField(field: field, message: violation.message(field: field))
        }
        let composed = trimmed.precomposedStringWithCanonicalMapping
        guard composed == composed.precomposedStringWithCompatibilityMapping else {
            throw .invalidField(
                field: field, message: "\(field) contains a compatibility character (fullwidth or a ligature); type the plain letter")
        }
        let folded = composed.folding(options: [.caseInsensitive], locale: nil).precomposedStringWithCanonicalMapping
        guard let at = folded.lastIndex(of: "@") else { return folded }
        let local = folded[..<at]
        let domain = folded[folded.index(after: at)...]
        for part in [local] + domain.split(separator: ".", omittingEmptySubsequences: false) where !isSingleScript(part) {
            throw .invalidField(field: field, message: "\(field) mixes letters of different scripts (or one this server does not accept)")
        }
        return folded
    }

    /// Whether every letter of `part` is of one script the server knows.
    static func isSingleScript(_ part: Substring) -> Bool {
        var seen: Script?
        for scalar in part.unicodeScalars where !scalar.isASCII || scalar.properties.isAlphabetic {
            if scalar.isASCII {
                if seen == nil || seen == .latin {
                    seen = .latin
                    continue
                } else {
                    return false
                }
            }
            if scalar.properties.generalCategory == .decimalNumber || !scalar.properties.isAlphabetic {
                // Combining marks follow their base letter; other non-letters are left to the shape check.
                continue
            }
            guard let script = script(of: scalar) else { return false }
            if let seen, seen != script { return false }
            seen = script
        }
        return true
    }

    /// The script of a letter, from its block; nil for letters of scripts not listed.
    static func script(of scalar: Unicode.Scalar) -> Script? {
        switch scalar.value {
        case 0x0041...0x024F, 0x1E00...0x1EFF, 0x2C60...0x2C7F, 0xA720...0xA7FF: .latin
        case 0x0370...0x03FF, 0x1F00...0x1FFF: .greek
        case 0x0400...0x052F, 0x2DE0...0x2DFF, 0xA640...0xA69F: .cyrillic
        case 0x0530...0x058F: .armenian
        case 0x0590...0x05FF: .hebrew
        case 0x0600...0x06FF, 0x0750...0x077F: .arabic
        case 0x0900...0x097F: .devanagari
        case 0x0E00...0x0E7F: .thai
        case 0x1100...0x11FF, 0x3130...0x318F, 0xAC00...0xD7AF: .hangul
        case 0x3040...0x30FF, 0x3400...0x4DBF, 0x4E00...0x9FFF: .cjk
        default: nil
        }
    }
    /// Longest local part (RFC 5321 §4.5.3.1.1: 64 octets).
    public static let maxLocalPartBytes = 64
    /// Longest domain label (RFC 1035 §2.3.4: 63 octets).
    public static let maxLabelBytes = 63
    /// The specials RFC 5322 §3.2.3 `atext` allows in a local part besides letters and digits.
    static let atextSpecials = Set("!#$%&'*+-/=?^_`{|}~".unicodeScalars)

    /// Whether `email` has the grammar this server stores and mails: a local part that
    /// is an RFC 5322 dot-atom (letters, digits, the `atext` specials, any non-ASCII character; dots
    /// only between atoms; at most 64 bytes) — so never a quoted string or a comment, and none of
    /// `( ) < > [ ] : ; @ \ , "` or a space, which a mail header or `RCPT TO` would read another
    /// way — `@`, then a host name: two or more labels of letters (any script), digits and inner
    /// hyphens, 1–63 bytes each, the last one not all digits (no address literals).
    public static func hasMailableShape(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let (local, domain) = (parts[0], parts[1])
        guard !local.isEmpty, local.utf8.count <= maxLocalPartBytes else { return false }
        for atom in local.split(separator: ".", omittingEmptySubsequences: false) {
            guard !atom.isEmpty,
                atom.unicodeScalars.allSatisfy({ scalar in
                    scalar.value > 0x7F || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                        || ("0"..."9").contains(scalar) || atextSpecials.contains(scalar)
                })
            else { return false }
        }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard !label.isEmpty, label.utf8.count <= maxLabelBytes, label.first != "-", label.last != "-",
                label.unicodeScalars.allSatisfy({ scalar in
                    scalar == "-" || ("0"..."9").contains(scalar)
                        || (scalar.properties.isAlphabetic
                            && (scalar.value > 0x7F || ("a"..."z").contains(scalar)
                                || ("A"..."Z").contains(scalar)))
                })
            else { return false }
        }
        return labels.last?.unicodeScalars.contains { !("0"..."9").contains($0) } ?? false
    }
}
