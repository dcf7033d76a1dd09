import CVips

/// Turns an upload's bytes into what is stored (`ProcessedMedia`) or a `MediaError`: sniff the type
/// from the magic bytes, refuse polyglots, read the header and refuse more than `limits.maxPixels`
/// before any pixel is decoded, then decode fully through libvips — images re-encoded with every
/// metadata block stripped (EXIF GPS positions never reach other members), PDFs parsed by poppler
/// for their first page — and a JPEG thumbnail. No files, sockets or clocks: bytes in, bytes out.
/// CPU-heavy and blocking: callers run it off the event loops (App's worker pool).
public struct MediaProcessor: Sendable {
    public let limits: MediaLimits

    public init(limits: MediaLimits = MediaLimits()) {
        self.limits = limits
    }

    /// libvips started once per process (`VIPS_INIT`, operation cache off, one worker thread per call).
    private static let libraryReady: Bool = chronir_vips_init() == 0

    /// Whether this libvips decodes HEIC (its `heif` module, libheif with an HEVC decoder). Debian 12's
    /// libvips 8.14 does; a build without it refuses HEIC uploads as an unsupported type.
    /// Looked up once (libvips' type lookup is not safe to race with its first use on other threads).
    public static let decodesHEIC: Bool = libraryReady && chronir_vips_has_operation("heifload_buffer") != 0
    /// Whether this libvips renders PDFs (its `poppler` module); without it PDFs are refused.
    public static let rendersPDF: Bool = libraryReady && chronir_vips_has_operation("pdfload_buffer") != 0

    /// Checks and converts `bytes`. `declaredType` is the request's `Content-Type` (nil or
    /// `application/octet-stream`: the content alone decides); a specific type must agree with the content.
    public func process(_ bytes: [UInt8], declaredType: String?) throws(MediaError) -> ProcessedMedia {
        guard Self.libraryReady else { throw .unsupportedType("image decoding is unavailable on this server") }
        guard let type = ContentSniffer.sniff(bytes) else {
            throw .unsupportedType("the content is not JPEG, PNG, HEIC or PDF")
        }
        if let declared = Self.essence(declaredType), declared != "application/octet-stream",
            !type.declaredNames.contains(declared)
        {
            throw .typeMismatch(declared: declared, actual: type)
        }
        if let reason = ContentSniffer.polyglot(bytes, as: type) { throw .polyglot(reason) }
        switch type {
        case .heic where !Self.decodesHEIC: throw .unsupportedType("this server's libvips cannot decode HEIC")
        case .pdf where !Self.rendersPDF: throw .unsupportedType("this server's libvips cannot read PDF")
        case .pdf where !ContentSniffer.pdfIsComplete(bytes): throw .corrupt("the PDF has no %%EOF marker: it is truncated")
        default: break
        }
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(MediaError) -> ProcessedMedia in try process(raw, type: type) }
        }
        var media = try result.get()
        // A PDF is stored as uploaded: the caller's array itself, not a copy of it.
        if media.type == .pdf { media.bytes = bytes }
        return media
    }

    /// `type/subtype` of a `Content-Type`, lowercased, without parameters.
    static func essence(_ contentType: String?) -> String? {
        guard let contentType else { return nil }
        let essence = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        let trimmed = essence.trimmingSpaces().lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }

    private func process(_ raw: UnsafeRawBufferPointer, type: MediaType) throws(MediaError) -> ProcessedMedia {
        var image = try load(raw, type: type, sequential: true)
        defer { chronir_vips_unref(image) }
        let width = Int(vips_image_get_width(image))
        let height = Int(vips_image_get_height(image))
        guard width > 0, height > 0, width.multipliedReportingOverflow(by: height).partialValue <= limits.maxPixels,
            width <= limits.maxPixels, height <= limits.maxPixels
        else { throw .tooManyPixels(width: width, height: height, limit: limits.maxPixels) }

        if type == .pdf {
            // Stored as uploaded; the first page, rendered, is the thumbnail.
            let thumbnail = try encodeThumbnail(of: image)
            return ProcessedMedia(
                type: .pdf, uploadedType: .pdf, bytes: [], width: width, height: height,
                thumbnail: thumbnail.bytes, thumbnailWidth: thumbnail.width, thumbnailHeight: thumbnail.height)
        }
        // EXIF orientation is applied before the EXIF block goes; a rotation needs random access.
        let orientation = vips_image_get_orientation(image)
        if orientation > 1 && orientation <= 8 {
            let random = try load(raw, type: type, sequential: false)
            defer { chronir_vips_unref(random) }
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

    private func load(_ raw: UnsafeRawBufferPointer, type: MediaType, sequential: Bool) throws(MediaError)
        -> UnsafeMutablePointer<VipsImage>
    {
        var image: UnsafeMutablePointer<VipsImage>?
        let flag: Int32 = sequential ? 1 : 0
        let result: Int32 =
            switch type {
            case .jpeg: chronir_vips_jpegload(raw.baseAddress, raw.count, &image, flag)
            case .png: chronir_vips_pngload(raw.baseAddress, raw.count, &image, flag)
            case .heic: chronir_vips_heifload(raw.baseAddress, raw.count, &image, flag)
            default: chronir_vips_pdfload(raw.baseAddress, raw.count, &image, flag)
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
