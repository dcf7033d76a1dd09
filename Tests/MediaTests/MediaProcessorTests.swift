import Media
import TestSupport
import Testing

/// The attachment content pipeline on real files made by libvips: accepted types, every refusal
/// (docs/attachments.md#what-is-refused), metadata stripping and thumbnails.
@Suite struct MediaProcessorTests {
    let processor = MediaProcessor()

    @Test func jpegIsReencodedWithoutExifAndGetsAThumbnail() throws {
        let upload = SampleMedia.jpeg(width: 1024, height: 768, gps: true)
        // The input really carries the GPS position the server must strip.
        #expect(SampleMedia.exif(upload).value?.hasPrefix("52/1 31/1 12/1") == true)
        let media = try processor.process(upload, declaredType: "image/jpeg")
        #expect(media.type == .jpeg && media.uploadedType == .jpeg)
        #expect(media.width == 1024 && media.height == 768)
        let stored = SampleMedia.exif(media.bytes)
        #expect(!stored.hasExif && stored.value == nil)
        #expect(!media.bytes.contains(sequence: Array("Exif".utf8)))
        #expect(!media.bytes.contains(sequence: Array("Chronir Test Camera".utf8)))
        let thumbnail = try #require(SampleMedia.jpegSize(media.thumbnail))
        #expect(thumbnail.width == 256 && thumbnail.height == 192)
        #expect(media.thumbnailWidth == 256 && media.thumbnailHeight == 192)
    }

    @Test func exifOrientationIsAppliedBeforeTheBlockIsStripped() throws {
        let media = try processor.process(SampleMedia.jpeg(width: 400, height: 100, orientation: 6), declaredType: nil)
        #expect(media.width == 100 && media.height == 400)
        #expect(SampleMedia.jpegSize(media.bytes).map { [$0.width, $0.height] } == [100, 400])
    }

    @Test func pngStaysPNG() throws {
        let media = try processor.process(SampleMedia.png(width: 320, height: 200), declaredType: "image/png; charset=x")
        #expect(media.type == .png && media.width == 320 && media.height == 200)
        #expect(media.bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(SampleMedia.jpegSize(media.thumbnail).map { [$0.width, $0.height] } == [256, 160])
    }

    @Test func heicIsDecodedHereAndStoredAsJPEG() throws {
        #expect(MediaProcessor.decodesHEIC)
        let media = try processor.process(SampleMedia.heic(width: 300, height: 200), declaredType: "image/heic")
        #expect(media.uploadedType == .heic && media.type == .jpeg)
        #expect(media.width == 300 && media.height == 200)
        #expect(SampleMedia.jpegSize(media.bytes) != nil)
    }

    @Test func pdfIsStoredAsUploadedWithAFirstPageThumbnail() throws {
        let pdf = SampleMedia.pdf()
        let media = try processor.process(pdf, declaredType: "application/pdf")
        #expect(media.type == .pdf && media.bytes == pdf)
        #expect(media.width == 72 && media.height == 72)
        #expect(SampleMedia.jpegSize(media.thumbnail) != nil)
    }

    @Test func anExecutableRenamedJPEGIsAnUnsupportedType() {
        #expect(throws: MediaError.unsupportedType("the content is not JPEG, PNG, HEIC or PDF")) {
            try processor.process(SampleMedia.elfExecutable, declaredType: "image/jpeg")
        }
        #expect(throws: MediaError.unsupportedType("the content is not JPEG, PNG, HEIC or PDF")) {
            try processor.process(Array("GIF89a".utf8) + Array(repeating: 0, count: 64), declaredType: nil)
        }
        #expect(throws: MediaError.unsupportedType("the content is not JPEG, PNG, HEIC or PDF")) {
            try processor.process([], declaredType: nil)
        }
    }

    @Test func aDeclaredTypeMustAgreeWithTheContent() {
        #expect(throws: MediaError.typeMismatch(declared: "image/jpeg", actual: .png)) {
            try processor.process(SampleMedia.png(), declaredType: "Image/JPEG")
        }
        #expect(throws: Never.self) { try processor.process(SampleMedia.png(), declaredType: "application/octet-stream") }
    }

    @Test func aTruncatedJPEGIsCorrupt() {
        let jpeg = SampleMedia.jpeg(width: 800, height: 600, gps: false)
        for cut in [jpeg.count / 2, jpeg.count - 2, 40] {
            let error = #expect(throws: MediaError.self) { try processor.process(Array(jpeg.prefix(cut)), declaredType: nil) }
            guard case .corrupt = error else {
                Issue.record("cut at \(cut): \(String(describing: error)), expected corrupt")
                continue
            }
        }
    }

    @Test func aDecompressionBombIsRefusedFromItsHeader() {
        let bomb = SampleMedia.pngBomb()
        #expect(bomb.count < 100)
        #expect(throws: MediaError.tooManyPixels(width: 100_000, height: 100_000, limit: 64_000_000)) {
            try processor.process(bomb, declaredType: "image/png")
        }
        // At the limit passes the header check (then fails the decode: its IDAT is a few bytes).
        let small = MediaProcessor(limits: MediaLimits(maxPixels: 8_000 * 8_000))
        #expect(throws: MediaError.tooManyPixels(width: 8_001, height: 8_000, limit: 64_000_000)) {
            try small.process(SampleMedia.pngBomb(width: 8_001, height: 8_000), declaredType: nil)
        }
        #expect(throws: MediaError.corrupt("the file could not be decoded: it is truncated, damaged, or not what its first bytes claim")) {
            try small.process(SampleMedia.pngBomb(width: 8_000, height: 8_000), declaredType: nil)
        }
    }

    @Test func polyglotsAreRefused() {
        let jpeg = SampleMedia.jpeg(gps: false)
        // A JPEG whose head also reads as a PDF (a comment segment holding %PDF-).
        let comment = Array("%PDF-1.4 1 0 obj".utf8)
        let length = comment.count + 2
        let withPDF = Array(jpeg.prefix(2)) + [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + comment + Array(jpeg.dropFirst(2))
        #expect(throws: MediaError.polyglot("it is also a PDF")) { try processor.process(withPDF, declaredType: nil) }
        // A JPEG with a ZIP archive appended (a JAR/APK reader opens it from the end).
        let zipTail: [UInt8] = [0x50, 0x4B, 0x05, 0x06] + Array(repeating: 0, count: 18)
        #expect(throws: MediaError.polyglot("it is also a ZIP archive")) { try processor.process(jpeg + zipTail, declaredType: nil) }
        // A PNG carrying markup a browser would sniff as HTML.
        let png = SampleMedia.png()
        let html = Array(png.prefix(33)) + Array("<script>alert(1)</script>".utf8) + Array(png.dropFirst(33))
        #expect(throws: MediaError.polyglot("it also holds markup (<script)")) { try processor.process(html, declaredType: nil) }
    }

    @Test func aTruncatedPDFIsCorrupt() {
        let pdf = SampleMedia.pdf()
        #expect(throws: MediaError.corrupt("the PDF has no %%EOF marker: it is truncated")) {
            try processor.process(Array(pdf.prefix(pdf.count - 20)), declaredType: nil)
        }
    }

    @Test func sniffingLooksAtMagicBytesOnly() {
        #expect(ContentSniffer.sniff([0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
        #expect(ContentSniffer.sniff([0xFF, 0xD8]) == nil)
        #expect(ContentSniffer.sniff(Array("%PDF-1.7".utf8)) == .pdf)
        #expect(ContentSniffer.sniff([0, 0, 0, 24] + Array("ftypheic".utf8)) == .heic)
        #expect(ContentSniffer.sniff([0, 0, 0, 24] + Array("ftypisom".utf8)) == nil)  // an MP4
        #expect(ContentSniffer.sniff(Array("MZ\u{90}\u{0}".utf8)) == nil)
    }
}

extension Array where Element == UInt8 {
    func contains(sequence: [UInt8]) -> Bool {
        guard sequence.count <= count else { return false }
        for i in 0...(count - sequence.count) where self[i..<(i + sequence.count)].elementsEqual(sequence) { return true }
        return false
    }
}
