import CVips
import CZlib
import Media

/// Real files for the attachment tests, built with the same libvips the server decodes with (no
/// checked-in binaries), and hand-assembled bytes for what no encoder writes: decompression bombs,
/// truncations, polyglots and a minimal PDF.
public enum SampleMedia {
    /// libvips started through `MediaProcessor`, never a second `chronir_vips_init`: two lazy starts in
    /// two modules raced once (a parallel test's first `jpegsave` failed while the other thread was
    /// still inside `vips_init`).
    private static var ready: Bool { MediaProcessor.libraryReady }

    /// A JPEG of `width` × `height` with an EXIF block (camera make, and GPS latitude 52° 31' 12" N
    /// when `gps`), and `orientation` (1 upright, 6 rotate 90° clockwise) when given.
    public static func jpeg(width: Int = 640, height: Int = 480, gps: Bool = true, orientation: Int? = nil) -> [UInt8] {
        encode(width: width, height: height) { image in
            vips_image_set_string(image, "exif-ifd0-Make", "Chronir Test Camera")
            if gps {
                vips_image_set_string(image, "exif-ifd3-GPSLatitudeRef", "N")
                vips_image_set_string(image, "exif-ifd3-GPSLatitude", "52/1 31/1 12/1")
            }
            if let orientation { vips_image_set_int(image, "orientation", Int32(orientation)) }
            var output: UnsafeMutableRawPointer?
            var length = 0
            precondition(chronir_vips_jpegsave_keep(image, &output, &length) == 0, "jpegsave failed")
            return (output, length)
        }
    }

    /// A PNG of `width` × `height`.
    public static func png(width: Int = 320, height: Int = 200) -> [UInt8] {
        encode(width: width, height: height) { image in
            var output: UnsafeMutableRawPointer?
            var length = 0
            precondition(chronir_vips_pngsave(image, &output, &length) == 0, "pngsave failed")
            return (output, length)
        }
    }

    /// A HEIC (HEVC) of `width` × `height`.
    public static func heic(width: Int = 300, height: Int = 200) -> [UInt8] {
        encode(width: width, height: height) { image in
            var output: UnsafeMutableRawPointer?
            var length = 0
            precondition(chronir_vips_heifsave(image, &output, &length) == 0, "heifsave failed")
            return (output, length)
        }
    }

    private static func encode(
        width: Int, height: Int, _ save: (UnsafeMutablePointer<VipsImage>) -> (UnsafeMutableRawPointer?, Int)
    ) -> [UInt8] {
        precondition(ready, "libvips failed to start")
        var image: UnsafeMutablePointer<VipsImage>?
        precondition(chronir_vips_black(&image, Int32(width), Int32(height)) == 0, "vips_black failed")
        defer { chronir_vips_unref(image) }
        let (output, length) = save(image!)
        defer { chronir_vips_free(output) }
        return Array(UnsafeRawBufferPointer(start: output, count: length))
    }

    /// A valid PNG header claiming `width` × `height` (default 100,000 × 100,000: 10^10 pixels, 30 GB
    /// decoded) followed by a few bytes of IDAT: a decompression bomb of under 100 bytes.
    public static func pngBomb(width: UInt32 = 100_000, height: UInt32 = 100_000) -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header = bigEndian(width) + bigEndian(height)
        header += [8, 2, 0, 0, 0]  // 8-bit RGB, deflate, adaptive filtering, no interlace
        bytes += chunk("IHDR", header)
        // zlib stream of a few zero bytes (a real bomb's IDAT would inflate to gigabytes).
        bytes += chunk("IDAT", [0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01])
        bytes += chunk("IEND", [])
        return bytes
    }

    /// A one-page PDF (72 × 72 pt) with a correct cross-reference table.
    public static func pdf() -> [UInt8] {
        pdf(objects: [
            Array("<< /Type /Catalog /Pages 2 0 R >>".utf8),
            Array("<< /Type /Pages /Kids [3 0 R] /Count 1 >>".utf8),
            Array("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] /Contents 4 0 R /Resources << >> >>".utf8),
            Array("<< /Length 30 >>\nstream\n0 0 1 rg 10 10 52 52 re f\nq Q\n\nendstream".utf8),
        ])
    }

    /// The render bomb of one page of `side` × `side` pt (7,990² is under the 64-Mpixel cap at
    /// 72 dpi) whose Flate content stream fills the whole page `fills` times. 1,000 fills make a PDF of
    /// ≈ 550 bytes that rendered 12 s at 72 dpi.
    public static func pdfRenderBomb(fills: Int, side: Int = 7_990) -> [UInt8] {
        let content = Array(("0 0 1 rg\n" + String(repeating: "0 0 \(side) \(side) re f\n", count: fills)).utf8)
        var length = compressBound(uLong(content.count))
        var compressed = [UInt8](repeating: 0, count: Int(length))
        let status = compress2(&compressed, &length, content, uLong(content.count), 9)
        precondition(status == Z_OK, "compress2 failed: \(status)")
        let stream =
            Array("<< /Length \(length) /Filter /FlateDecode >>\nstream\n".utf8) + compressed.prefix(Int(length))
            + Array("\nendstream".utf8)
        return pdf(objects: [
            Array("<< /Type /Catalog /Pages 2 0 R >>".utf8),
            Array("<< /Type /Pages /Kids [3 0 R] /Count 1 >>".utf8),
            Array("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(side) \(side)] /Contents 4 0 R /Resources << >> >>".utf8),
            stream,
        ])
    }

    /// A PDF of `objects` (numbered from 1; the first is the catalog) with a correct cross-reference table.
    static func pdf(objects: [[UInt8]]) -> [UInt8] {
        var out = Array("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".utf8)
        var offsets: [Int] = []
        for (index, body) in objects.enumerated() {
            offsets.append(out.count)
            out += Array("\(index + 1) 0 obj\n".utf8) + body + Array("\nendobj\n".utf8)
        }
        let xref = out.count
        var text = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets {
            let digits = String(offset)
            text += String(repeating: "0", count: 10 - digits.count) + digits + " 00000 n \n"
        }
        text += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return out + Array(text.utf8)
    }

    /// The first bytes of an ELF executable (what `file` calls "ELF 64-bit LSB executable").
    public static let elfExecutable: [UInt8] =
        [0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00] + Array(repeating: 0, count: 8) + [0x02, 0x00, 0x3E, 0x00]
        + Array(repeating: 0x90, count: 200)

    /// Whether an encoded JPEG or PNG carries an EXIF block, and the value of one EXIF field if so
    /// (libvips names them `exif-ifd3-GPSLatitude` and so on).
    public static func exif(_ bytes: [UInt8], field: String = "exif-ifd3-GPSLatitude") -> (hasExif: Bool, value: String?) {
        precondition(ready, "libvips failed to start")
        return bytes.withUnsafeBytes { raw in
            var image: UnsafeMutablePointer<VipsImage>?
            let loaded =
                bytes.starts(with: [0x89, 0x50])
                ? chronir_vips_pngload(raw.baseAddress, raw.count, &image, 1)
                : chronir_vips_jpegload(raw.baseAddress, raw.count, &image, 1)
            guard loaded == 0, let image else { return (false, nil) }
            defer { chronir_vips_unref(image) }
            let hasExif = vips_image_get_typeof(image, "exif-data") != 0
            var value: UnsafePointer<CChar>?
            guard vips_image_get_typeof(image, field) != 0, vips_image_get_string(image, field, &value) == 0, let value else {
                return (hasExif, nil)
            }
            return (hasExif, String(cString: value))
        }
    }

    /// Width and height of an encoded JPEG (a thumbnail, a re-encoded upload).
    public static func jpegSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        bytes.withUnsafeBytes { raw in
            var image: UnsafeMutablePointer<VipsImage>?
            guard chronir_vips_jpegload(raw.baseAddress, raw.count, &image, 1) == 0, let image else { return nil }
            defer { chronir_vips_unref(image) }
            return (Int(vips_image_get_width(image)), Int(vips_image_get_height(image)))
        }
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    /// CRC-32 (ISO 3309, the PNG chunk checksum).
    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }
}
