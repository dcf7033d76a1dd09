/// Why an upload's content was refused. App maps each to its wire code (docs/api.md#errors).
public enum MediaError: Error, Equatable, Sendable {
    /// The magic bytes name no accepted type (an executable renamed `.jpg`, HTML, ZIP, GIF…), or a
    /// type this libvips cannot decode. → 415.
    case unsupportedType(String)
    /// The declared `Content-Type` names another type than the content is. → 415.
    case typeMismatch(declared: String, actual: MediaType)
    /// The bytes are also another format (see `ContentSniffer.polyglot`). → 422.
    case polyglot(String)
    /// The decoder refused the content: truncated, damaged, or not what its magic bytes claim. → 422.
    case corrupt(String)
    /// The header claims more pixels than `MediaLimits.maxPixels`. → 422.
    case tooManyPixels(width: Int, height: Int, limit: Int)
    /// Rendering would cost more than the limits allow: a PDF whose content inflates past
    /// `MediaLimits.maxPDFContentBytes`, or a decode stopped at `renderDeadlineMilliseconds`. → 422
    /// (the same code as `tooManyPixels`: both say the content is too large to render).
    case tooCostly(String)
}
