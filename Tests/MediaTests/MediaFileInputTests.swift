import Foundation
import Media
import TestSupport
import Testing

/// `MediaProcessor.process(file:declaredType:)`, the path of uploads the transport streamed to disk:
/// the same verdicts and output as from bytes, with only the file's head and tail read into memory.
@Suite("Media — processing an upload from its file")
struct MediaFileInputTests {
    let processor = MediaProcessor()
    let directory = TemporaryDirectory(prefix: "media")

    func file(_ bytes: [UInt8], _ name: String = "upload") throws -> String {
        let path = directory.path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("JPEG (EXIF orientation and GPS), PNG, HEIC: the same result as from bytes")
    func imagesAgreeWithBytes() throws {
        let inputs = [
            SampleMedia.jpeg(width: 400, height: 100, gps: true, orientation: 6), SampleMedia.png(), SampleMedia.heic(),
        ]
        for (index, input) in inputs.enumerated() {
            let fromBytes = try processor.process(input, declaredType: nil)
            let fromFile = try processor.process(file: try file(input, "i\(index)"), declaredType: nil)
            #expect(fromFile.type == fromBytes.type && fromFile.uploadedType == fromBytes.uploadedType)
            #expect(fromFile.width == fromBytes.width && fromFile.height == fromBytes.height)
            #expect(fromFile.bytes == fromBytes.bytes && fromFile.thumbnail == fromBytes.thumbnail)
            #expect(!SampleMedia.exif(fromFile.bytes).hasExif)
        }
    }

    @Test("a PDF from its file: checked and thumbnailed; its bytes are left in the file (empty here)")
    func pdf() throws {
        let media = try processor.process(file: try file(SampleMedia.pdf()), declaredType: "application/pdf")
        #expect(media.type == .pdf && media.bytes.isEmpty && !media.thumbnail.isEmpty)
    }

    @Test("refusals from a file: type, mismatch, truncation, polyglot head and ZIP tail, bomb, unreadable")
    func refusals() throws {
        let jpeg = SampleMedia.jpeg()
        #expect(throws: MediaError.self) { try processor.process(file: try file(Array("\u{7F}ELF....".utf8)), declaredType: nil) }
        #expect(throws: MediaError.typeMismatch(declared: "image/jpeg", actual: .png)) {
            try processor.process(file: try file(SampleMedia.png()), declaredType: "image/jpeg")
        }
        #expect(throws: MediaError.self) { try processor.process(file: try file(Array(jpeg.prefix(jpeg.count / 2))), declaredType: nil) }
        // A ZIP end-of-central-directory record near the end is refused; one before the ZIP tail window is not a ZIP.
        let zipTail = jpeg + [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 1000)
        guard case .polyglot? = Self.error(try processor.process(file: try file(zipTail), declaredType: nil)) else {
            Issue.record("a ZIP tail must be refused as a polyglot")
            return
        }
        let zipFar = jpeg + [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: ContentSniffer.zipTailWindow)
        if case .polyglot? = Self.error(try processor.process(file: try file(zipFar), declaredType: nil)) {
            Issue.record("a record outside the ZIP tail window is not a ZIP")
        }
        guard case .tooManyPixels? = Self.error(try processor.process(file: try file(SampleMedia.pngBomb()), declaredType: nil))
        else {
            Issue.record("the bomb must be refused from its header")
            return
        }
        #expect(throws: MediaError.self) { try processor.process(file: directory.path + "/missing", declaredType: nil) }
    }

    static func error(_ body: @autoclosure () throws -> ProcessedMedia) -> MediaError? {
        do {
            _ = try body()
            return nil
        } catch let error as MediaError {
            return error
        } catch {
            return nil
        }
    }
}
