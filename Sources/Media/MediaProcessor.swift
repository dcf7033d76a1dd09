import CVips
import Glibc

/// Turns an upload's bytes into what is stored (`ProcessedMedia`) or a `MediaError`: sniff the type
/// from the magic bytes, refuse polyglots, read the header and refuse more than `limits.maxPixels`
/// before any pixel is decoded, then decode fully through libvips — images re-encoded with every
/// metadata block stripped (EXIF GPS positions never reach other members), PDFs parsed by poppler
/// for their first page — and a JPEG thumbnail. Input is bytes in memory, or the one file an upload
/// was streamed to (`process(file:declaredType:)`: only its head and tail are read into memory, libvips
/// decodes from the file; a PDF is read whole for `PDFContentBound`); output is bytes. No sockets; the
/// one clock is libvips' own, for the render deadline (`MediaLimits.renderDeadlineMilliseconds`).
/// A PDF's cost is bounded before it is rendered (`MediaLimits.maxPDFContentBytes`) and its first page
/// is rendered at thumbnail size only. CPU-heavy and blocking: callers run it off the event loops, on
/// a pool of its own (App's `Services.decoding`).
public struct MediaProcessor: Sendable {
    public let limits: MediaLimits

    public init(limits: MediaLimits = MediaLimits()) {
        self.limits = limits
    }

    /// libvips started once per process (`VIPS_INIT`, operation cache off, one worker thread per call).
    /// The one place that starts it: `vips_init` is not safe to run twice at once, so everything else
    /// in the process that uses libvips (TestSupport's `SampleMedia`) waits on this too.
    public static let libraryReady: Bool = chronir_vips_init() == 0

    /// Whether this libvips decodes HEIC (its `heif` module, libheif with an HEVC decoder). Debian 12's
    /// libvips 8.14 does; a build without it refuses HEIC uploads as an unsupported type.
    /// Looked up once (libvips' type lookup is not safe to race with its first use on other threads).
    public static let decodesHEIC: Bool = libraryReady && chronir_vips_has_operation("heifload_buffer") != 0
    /// Whether this libvips renders PDFs (its `poppler` module); without it PDFs are refused.
    public static let rendersPDF: Bool = libraryReady && chronir_vips_has_operation("pdfload_buffer") != 0

    /// Checks and converts `bytes`. `declaredType` is the request's `Content-Type` (nil or
    /// `application/octet-stream`: the content alone decides); a specific type must agree with the content.
    public func process(_ bytes: [UInt8], declaredType: String?) throws(MediaError) -> ProcessedMedia {
        let type = try check(head: bytes, tail: bytes, declaredType: declaredType)
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(MediaError) -> ProcessedMedia in try process(.buffer(raw), type: type) }
        }
        var media = try result.get()
        // A PDF is stored as uploaded: the caller's array itself, not a copy of it.
        if media.type == .pdf { media.bytes = bytes }
        return media
    }

    /// Checks and converts the file at `path` like `process(_:declaredType:)`, reading into memory only
    /// its first `ContentSniffer.headWindow` and last `ContentSniffer.zipTailWindow` bytes; libvips
    /// decodes from the file. For a PDF `bytes` is empty: the file itself is what is stored.
    public func process(file path: String, declaredType: String?) throws(MediaError) -> ProcessedMedia {
        guard let (head, tail) = Self.headAndTail(of: path) else { throw .corrupt("the upload could not be read") }
        let type = try check(head: head, tail: tail, declaredType: declaredType)
        return try process(.file(path), type: type)
    }

    /// The type the content is, once the checks that need no decode passed: magic bytes, the declared
    /// type, polyglots, what this libvips can read, a PDF's `%%EOF`. `head` and `tail` are the input's
    /// first and last bytes (at least `headWindow` and `zipTailWindow` of them, or all of it).
    private func check(head: [UInt8], tail: [UInt8], declaredType: String?) throws(MediaError) -> MediaType {
        guard Self.libraryReady else { throw .unsupportedType("image decoding is unavailable on this server") }
        guard let type = ContentSniffer.sniff(head) else {
            throw .unsupportedType("the content is not JPEG, PNG, HEIC or PDF")
        }
        if let declared = Self.essence(declaredType), declared != "application/octet-stream",
            !type.declaredNames.contains(declared)
        {
            throw .typeMismatch(declared: declared, actual: type)
        }
        if let reason = ContentSniffer.polyglot(head: head, tail: tail, as: type) { throw .polyglot(reason) }
        switch type {
        case .heic where !Self.decodesHEIC: throw .unsupportedType("this server's libvips cannot decode HEIC")
        case .pdf where !Self.rendersPDF: throw .unsupportedType("this server's libvips cannot read PDF")
        case .pdf where !ContentSniffer.pdfIsComplete(tail): throw .corrupt("the PDF has no %%EOF marker: it is truncated")
        default: break
        }
        return type
    }

    /// The first `headWindow` and last `zipTailWindow` bytes of the file at `path`; nil when it cannot be read.
    static func headAndTail(of path: String) -> (head: [UInt8], tail: [UInt8])? {
        withFile(path) { fd, size in
            let headCount = min(size, ContentSniffer.headWindow)
            let tailCount = min(size, ContentSniffer.zipTailWindow)
            guard let head = read(fd, headCount, at: 0), let tail = read(fd, tailCount, at: size - tailCount) else { return nil }
            return (head, tail)
        }
    }

    /// Every byte of the file at `path` (a PDF, for `PDFContentBound`: at most the upload limit); nil when
    /// it cannot be read.
    static func contents(of path: String) -> [UInt8]? {
        withFile(path) { fd, size in read(fd, size, at: 0) }
    }

    /// `body` with the open file at `path` and its size; nil when it cannot be opened.
    private static func withFile<T>(_ path: String, _ body: (Int32, Int) -> T?) -> T? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return body(fd, Int(info.st_size))
    }

    /// `count` bytes of `fd` from `offset`; nil on an error or a short file.
    private static func read(_ fd: Int32, _ count: Int, at offset: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// Where a decode reads from.
    private enum Source {
        case buffer(UnsafeRawBufferPointer)
        case file(String)
    }

    /// `type/subtype` of a `Content-Type`, lowercased, without parameters.
    static func essence(_ contentType: String?) -> String? {
        guard let contentType else { return nil }
        let essence = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        let trimmed = essence.trimmingSpaces().lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    private func process(_ source: Source, type: MediaType) throws(MediaError) -> ProcessedMedia {
        // The render deadline, armed on every image this decode evaluates; freed after them (defers run in reverse).
        let deadline = UnsafeMutablePointer<chronir_deadline>.allocate(capacity: 1)
        deadline.initialize(to: chronir_deadline())
        defer { deadline.deallocate() }
        let milliseconds = limits.renderDeadlineMilliseconds
        var image = try load(source, type: type, sequential: true)
        defer { chronir_vips_unref(image) }
        chronir_vips_set_deadline(image, deadline, milliseconds)
        let width = Int(vips_image_get_width(image))
        let height = Int(vips_image_get_height(image))
        guard width > 0, height > 0, width.multipliedReportingOverflow(by: height).partialValue <= limits.maxPixels,
            width <= limits.maxPixels, height <= limits.maxPixels
        else { throw .tooManyPixels(width: width, height: height, limit: limits.maxPixels) }
        do {
            if type == .pdf {
                // Stored as uploaded; the first page, rendered at thumbnail size, is the thumbnail.
                let page = try renderPDFPage(source, width: width, height: height)
                defer { chronir_vips_unref(page) }
                chronir_vips_set_deadline(page, deadline, milliseconds)
                let thumbnail = try encodeThumbnail(of: page)
                return ProcessedMedia(
                    type: .pdf, uploadedType: .pdf, bytes: [], width: width, height: height,
                    thumbnail: thumbnail.bytes, thumbnailWidth: thumbnail.width, thumbnailHeight: thumbnail.height)
            }
            return try reencode(source, type: type, image: &image) { chronir_vips_set_deadline($0, deadline, milliseconds) }
        } catch  where deadline.pointee.fired != 0 {
            throw .tooCostly("the file took longer than \(milliseconds) ms to render")
        }
    }

    /// A PDF's first page rendered at thumbnail size (`width` × `height` is the page at 72 dpi), after
    /// `PDFContentBound` found its content within `limits.maxPDFContentBytes`. Only the first page is
    /// ever rendered (pdfload's default `n = 1`), and at `thumbnailSide / max(width, height)` × 72 dpi:
    /// a fill then costs a thumbnail's pixels, not up to 64 Mpixels.
    private func renderPDFPage(_ source: Source, width: Int, height: Int) throws(MediaError) -> UnsafeMutablePointer<VipsImage> {
        let limit = limits.maxPDFContentBytes
        let content: Int
        switch source {
        case .buffer(let raw):
            content = PDFContentBound.inflatedContentBytes(raw, limit: limit)
        case .file(let path):
            guard let bytes = Self.contents(of: path) else { throw .corrupt("the upload could not be read") }
            content = bytes.withUnsafeBytes { PDFContentBound.inflatedContentBytes($0, limit: limit) }
        }
        guard content <= limit else {
            throw .tooCostly("the PDF's drawing content inflates to more than \(limit) bytes")
        }
        let scale = min(1, Double(limits.thumbnailSide) / Double(max(width, height)))
        var page: UnsafeMutablePointer<VipsImage>?
        let result =
            switch source {
            case .buffer(let raw): chronir_vips_pdfload_scaled(raw.baseAddress, raw.count, &page, scale)
            case .file(let path): chronir_vips_pdfload_file_scaled(path, &page, scale)
            }
        guard result == 0, let page else { throw Self.decodeFailure() }
        return page
    }

    /// An image re-encoded without metadata (upright), and its thumbnail. `image` is the sequential
    /// load; `arm` sets the render deadline on any other image this decodes.
    private func reencode(
        _ source: Source, type: MediaType, image: inout UnsafeMutablePointer<VipsImage>,
        arm: (UnsafeMutablePointer<VipsImage>) -> Void
    ) throws(MediaError) -> ProcessedMedia {
        // EXIF orientation is applied before the EXIF block goes; a rotation needs random access.
        let orientation = vips_image_get_orientation(image)
        if orientation > 1 && orientation <= 8 {
            let random = try load(source, type: type, sequential: false)
            defer { chronir_vips_unref(random) }
            arm(random)
            var upright: UnsafeMutablePointer<VipsImage>?
            guard chronir_vips_autorot(random, &upright) == 0, let upright else { throw Self.decodeFailure() }
            chronir_vips_unref(image)
            image = upright
        }
        let storedType: MediaType = type == .png ? .png : .jpeg
        var output: UnsafeMutableRawPointer?
        var length = 0
        let saved =
            storedType == .png
            ? chronir_vips_pngsave(image, &output, &length)
            : chronir_vips_jpegsave(image, &output, &length, Int32(limits.jpegQuality))
        guard saved == 0, let output else { throw Self.decodeFailure() }
        let stored = Array(UnsafeRawBufferPointer(start: output, count: length))
        chronir_vips_free(output)
        let thumbnail = try stored.withUnsafeBytes { encoded in
            Result { () throws(MediaError) -> Encoded in
                var small: UnsafeMutablePointer<VipsImage>?
                let side = Int32(limits.thumbnailSide)
                guard chronir_vips_thumbnail_buffer(encoded.baseAddress, encoded.count, &small, side) == 0, let small else {
                    throw Self.decodeFailure()
                }
                defer { chronir_vips_unref(small) }
                arm(small)
                return try encodeJPEG(small, quality: limits.thumbnailQuality)
            }
        }.get()
        return ProcessedMedia(
            type: storedType, uploadedType: type, bytes: stored, width: Int(vips_image_get_width(image)),
            height: Int(vips_image_get_height(image)), thumbnail: thumbnail.bytes, thumbnailWidth: thumbnail.width,
            thumbnailHeight: thumbnail.height)
    }

    private struct Encoded {
        var bytes: [UInt8]
        var width: Int
        var height: Int
    }

    private func load(_ source: Source, type: MediaType, sequential: Bool) throws(MediaError)
        -> UnsafeMutablePointer<VipsImage>
    {
        var image: UnsafeMutablePointer<VipsImage>?
        let flag: Int32 = sequential ? 1 : 0
        let result: Int32
        switch source {
        case .buffer(let raw):
            result =
                switch type {
                case .jpeg: chronir_vips_jpegload(raw.baseAddress, raw.count, &image, flag)
                case .png: chronir_vips_pngload(raw.baseAddress, raw.count, &image, flag)
                case .heic: chronir_vips_heifload(raw.baseAddress, raw.count, &image, flag)
                default: chronir_vips_pdfload(raw.baseAddress, raw.count, &image, flag)
                }
        case .file(let path):
            result =
                switch type {
                case .jpeg: chronir_vips_jpegload_file(path, &image, flag)
                case .png: chronir_vips_pngload_file(path, &image, flag)
                case .heic: chronir_vips_heifload_file(path, &image, flag)
                default: chronir_vips_pdfload_file(path, &image, flag)
                }
        }
        guard result == 0, let image else { throw Self.decodeFailure() }
        return image
    }

    private func encodeThumbnail(of image: UnsafeMutablePointer<VipsImage>) throws(MediaError) -> Encoded {
        var small: UnsafeMutablePointer<VipsImage>?
        guard chronir_vips_thumbnail(image, &small, Int32(limits.thumbnailSide)) == 0, let small else {
            throw Self.decodeFailure()
        }
        defer { chronir_vips_unref(small) }
        return try encodeJPEG(small, quality: limits.thumbnailQuality)
    }

    /// JPEG without metadata; an alpha channel is flattened onto white first.
    private func encodeJPEG(_ image: UnsafeMutablePointer<VipsImage>, quality: Int) throws(MediaError) -> Encoded {
        var source = image
        var flattened: UnsafeMutablePointer<VipsImage>?
        if vips_image_hasalpha(image) != 0 {
            guard chronir_vips_flatten(image, &flattened) == 0, let flattened else { throw Self.decodeFailure() }
            source = flattened
        }
        defer { if let flattened { chronir_vips_unref(flattened) } }
        var output: UnsafeMutableRawPointer?
        var length = 0
        guard chronir_vips_jpegsave(source, &output, &length, Int32(quality)) == 0, let output else {
            throw Self.decodeFailure()
        }
        defer { chronir_vips_free(output) }
        return Encoded(
            bytes: Array(UnsafeRawBufferPointer(start: output, count: length)), width: Int(vips_image_get_width(source)),
            height: Int(vips_image_get_height(source)))
    }

    /// libvips' error text is dropped (it may quote the input); the peer gets one fixed reason.
    private static func decodeFailure() -> MediaError {
        vips_error_clear()
        return .corrupt("the file could not be decoded: it is truncated, damaged, or not what its first bytes claim")
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = self[...]
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
