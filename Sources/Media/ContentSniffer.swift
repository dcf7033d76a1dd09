/// Decides a file's type from its first bytes, and refuses bytes that another format's reader would
/// also accept (a polyglot). Pure: bytes in, a verdict out.
public enum ContentSniffer {
    /// The type the magic bytes name, or nil for anything else (an executable renamed `.jpg`, HTML, ZIP…).
    public static func sniff(_ bytes: [UInt8]) -> MediaType? {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if bytes.starts(with: Array("%PDF-".utf8)) { return .pdf }
        // ISO-BMFF: a 4-byte box size, then `ftyp` and the major brand.
        if bytes.count >= 12, Array(bytes[4..<8]) == Array("ftyp".utf8),
            heifBrands.contains(String(decoding: bytes[8..<12], as: UTF8.self))
        {
            return .heic
        }
        return nil
    }

    /// HEIF major brands (ISO/IEC 23008-12 Annex B; `mif1`/`msf1` the generic image and sequence brands).
    static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]

    /// How far from the start a PDF reader looks for `%PDF-` (Acrobat accepts it within the first
    /// 1024 bytes) and a browser sniffs for markup (WHATWG MIME Sniffing §7.1: 512 bytes; we look further).
    public static let headWindow = 1024
    /// How far from the end a ZIP reader looks for its end-of-central-directory record (22 bytes plus
    /// a comment of at most 65,535).
    public static let zipTailWindow = 22 + 65_535

    /// Why `bytes`, sniffed as `type`, are also another format, or nil when they are not.
    /// Checked: `%PDF-` inside an image's head; markup (`<html`, `<script`, `<svg`, `<?php`, `<!doctype`)
    /// in the head; a ZIP end-of-central-directory record in the tail (JAR/APK/Office/ZIP readers).
    public static func polyglot(_ bytes: [UInt8], as type: MediaType) -> String? {
        polyglot(head: Array(bytes.prefix(headWindow)), tail: Array(bytes.suffix(zipTailWindow)), as: type)
    }

    /// `polyglot(_:as:)` from a file's first `headWindow` bytes and last `zipTailWindow` bytes (fewer
    /// when the file is shorter; they overlap then), which is all it looks at.
    public static func polyglot(head: [UInt8], tail: [UInt8], as type: MediaType) -> String? {
        let head = Array(head.prefix(headWindow))
        if type != .pdf, contains(head, Array("%PDF-".utf8)) { return "it is also a PDF" }
        let lowered = head.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        for marker in ["<html", "<script", "<svg", "<?php", "<!doctype"] where contains(lowered, Array(marker.utf8)) {
            return "it also holds markup (\(marker))"
        }
        let tail = Array(tail.suffix(zipTailWindow))
        if contains(tail, [0x50, 0x4B, 0x05, 0x06]) { return "it is also a ZIP archive" }
        return nil
    }

    /// Whether a PDF ends with its `%%EOF` marker in the last 1024 bytes (ISO 32000-1 §7.5.5): a PDF cut short has none.
    public static func pdfIsComplete(_ bytes: [UInt8]) -> Bool {
        contains(Array(bytes.suffix(1024)), Array("%%EOF".utf8))
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}
