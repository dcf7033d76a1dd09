import Foundation
import Media
import TestSupport
import Testing

/// A render bomb: a tiny PDF whose one huge page's Flate content stream repeats a full-page fill
/// N times. Its cost is bounded before poppler runs (`MediaLimits.maxPDFContentBytes`, at the limit and
/// one byte over), and what is accepted is rendered at thumbnail size, never the page's 64 Mpixels.
@Suite("PDF render bombs")
struct PDFRenderBombTests {
    /// What the bomb's content stream inflates to: the colour operator, then one line per fill.
    static func contentBytes(fills: Int, side: Int = 7_990) -> Int {
        "0 0 1 rg\n".utf8.count + fills * "0 0 \(side) \(side) re f\n".utf8.count
    }

    @Test("the attack's PDF (1,000 fills of a 7,990² pt page, ≈ 550 bytes) is accepted, rendered at thumbnail size")
    func attackRendersAtThumbnailSize() throws {
        let bomb = SampleMedia.pdfRenderBomb(fills: 1_000)
        #expect(bomb.count < 700)
        let media = try MediaProcessor().process(bomb, declaredType: "application/pdf")
        #expect(media.width == 7_990 && media.height == 7_990)  // the page, at 72 dpi, under 64 Mpixels
        #expect(media.thumbnailWidth == 256 && media.thumbnailHeight == 256)
    }

    @Test("content past maxPDFContentBytes is refused before rendering: at the limit accepted, one byte over 422")
    func contentBound() throws {
        let fills = 2_000
        let bomb = SampleMedia.pdfRenderBomb(fills: fills)
        let size = Self.contentBytes(fills: fills)
        let atLimit = MediaProcessor(limits: MediaLimits(maxPDFContentBytes: size))
        #expect(try atLimit.process(bomb, declaredType: nil).type == .pdf)
        let over = MediaProcessor(limits: MediaLimits(maxPDFContentBytes: size - 1))
        #expect(throws: MediaError.tooCostly("the PDF's drawing content inflates to more than \(size - 1) bytes")) {
            try over.process(bomb, declaredType: nil)
        }
    }

    @Test("the default bound refuses a 10 MiB-class bomb (250,000 fills, 4.75 MB of operators from ≈ 12 KB)")
    func defaultBound() throws {
        let bomb = SampleMedia.pdfRenderBomb(fills: 250_000)
        #expect(bomb.count < 64 * 1024)
        #expect(Self.contentBytes(fills: 250_000) > MediaLimits().maxPDFContentBytes)
        #expect(throws: MediaError.tooCostly("the PDF's drawing content inflates to more than \(4 << 20) bytes")) {
            try MediaProcessor().process(bomb, declaredType: nil)
        }
    }

    @Test("streamed to a file, the same bound applies")
    func fileInput() throws {
        let directory = TemporaryDirectory(prefix: "media")
        let path = directory.path + "/bomb.pdf"
        try Data(SampleMedia.pdfRenderBomb(fills: 250_000)).write(to: URL(fileURLWithPath: path))
        #expect(throws: MediaError.tooCostly("the PDF's drawing content inflates to more than \(4 << 20) bytes")) {
            try MediaProcessor().process(file: path, declaredType: nil)
        }
    }

    @Test("a decode past renderDeadlineMilliseconds is stopped by libvips' kill: 422 naming the deadline")
    func deadline() {
        // libvips reports progress between tiles: a render of many tiles (a 4,096-px thumbnail) is
        // reported, and so stopped, before it ends, however loaded the machine is.
        let expired = MediaProcessor(limits: MediaLimits(thumbnailSide: 4_096, renderDeadlineMilliseconds: 0))
        for input in [SampleMedia.pdfRenderBomb(fills: 100), SampleMedia.jpeg(width: 2_000, height: 1_500)] {
            #expect(throws: MediaError.tooCostly("the file took longer than 0 ms to render")) {
                try expired.process(input, declaredType: nil)
            }
        }
    }
}
