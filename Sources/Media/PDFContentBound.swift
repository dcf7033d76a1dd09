import CZlib

/// A bound on how much drawing a PDF asks for, checked before poppler renders it (a 602-byte
/// PDF whose one Flate stream repeats a fill 1,000 times rendered 12 s). Sums what every Flate stream
/// inflates to — page contents, form XObjects, object streams — except images and font files (their
/// bytes are pixels or glyphs, which poppler decodes once, not operators it runs) and stops counting
/// once the sum passes the limit. Pure: bytes in, a count out; no PDF object model, so it is
/// conservative: a stream it cannot tell apart is counted.
///
///     N 0 obj
///     << /Length … /Filter /FlateDecode … >>     ← the dictionary: /Subtype /Image or /Length1–3 → skipped
///     stream\r\n  (or \n)
///     …zlib bytes…                               ← inflated until Z_STREAM_END, capped at the limit
///     endstream
enum PDFContentBound {
    /// Bytes the dictionary before a `stream` keyword is looked for in, backwards from the keyword.
    static let dictionaryWindow = 1024

    /// Inflated bytes of the counted streams in `pdf`, stopping as soon as they pass `limit` (the
    /// result is then `limit + 1` or more).
    static func inflatedContentBytes(_ pdf: UnsafeRawBufferPointer, limit: Int) -> Int {
        let bytes = pdf.bindMemory(to: UInt8.self)
        let keyword = Array("stream".utf8)
        var total = 0
        var i = 0
        while i + keyword.count < bytes.count, total <= limit {
            guard bytes[i] == 0x73, bytes[i..<(i + keyword.count)].elementsEqual(keyword),
                i == 0 || bytes[i - 1] != 0x64  // not the tail of `endstream`
            else {
                i += 1
                continue
            }
            var start = i + keyword.count
            if start < bytes.count, bytes[start] == 0x0D { start += 1 }
            guard start < bytes.count, bytes[start] == 0x0A else {
                i += 1
                continue
            }
            start += 1
            if counts(dictionaryBefore: i, in: bytes) {
                total += inflatedSize(UnsafeBufferPointer(rebasing: bytes[start...]), limit: limit - total + 1)
            }
            i = start
        }
        return total
    }

    /// Whether the stream whose `stream` keyword is at `keyword` is counted: its dictionary (the last
    /// `<<` … `>>` before the keyword) names no image and no embedded font program.
    static func counts(dictionaryBefore keyword: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var window = Array(bytes[max(0, keyword - dictionaryWindow)..<keyword])
        // Only this object's own dictionary: what follows the last `obj` keyword before the stream.
        var j = window.count - 3
        while j >= 0, !(window[j] == 0x6F && window[j + 1] == 0x62 && window[j + 2] == 0x6A) { j -= 1 }
        if j >= 0 { window.removeFirst(j) }
        return !skippedMarkers.contains { ContentSniffer.contains(window, $0) }
    }

    /// Dictionary entries of streams that are not drawing: images, and font programs (FontFile with
    /// `/Length1`, Type 1 with `/Length2`–`/Length3`, FontFile3's subtypes).
    static let skippedMarkers: [[UInt8]] = ["/Image", "/Length1", "/Length2", "/Length3", "/Type1C", "/CIDFontType0C", "/OpenType"]
        .map { Array($0.utf8) }

    /// Bytes the zlib stream at the start of `input` inflates to, at most `limit` (then it stops);
    /// 0 when it is not a zlib stream (another filter, or none).
    static func inflatedSize(_ input: UnsafeBufferPointer<UInt8>, limit: Int) -> Int {
        var stream = z_stream()
        guard inflateInit_(&stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return 0 }
        defer { inflateEnd(&stream) }
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
        stream.avail_in = uInt(min(input.count, Int(UInt32.max)))
        var produced = 0
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 * 1024) { scratch in
            while produced <= limit {
                stream.next_out = scratch.baseAddress
                stream.avail_out = uInt(scratch.count)
                let status = inflate(&stream, Z_NO_FLUSH)
                produced += scratch.count - Int(stream.avail_out)
                guard status == Z_OK else { break }  // Z_STREAM_END, or not (or no longer) zlib data
            }
            return produced
        }
    }
}
