import Domain
import Foundation
public import Wire

/// Request-body decoding and response-body encoding for JSON endpoints. Decoding failures become
/// 422 VALIDATION_FAILED naming the field; a non-JSON `Content-Type` becomes 415.
public enum JSONBody {
    /// Decodes the request body as `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from request: Request) throws(APIError) -> T {
        if let contentType = request.headers[first: "content-type"] {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                String($0).lowercased().filter { $0 != " " && $0 != "\t" }
            }
            guard mediaType == "application/json" else {
                throw APIError(.unsupportedMediaType, "Content-Type must be application/json")
            }
        }
        guard !request.http.body.isEmpty else {
            throw APIError(.validationFailed, "a JSON object body is required")
        }
        do {
            return try DocumentCoding.decode(type, from: request.http.body)
        } catch let error as DecodingError {
            throw apiError(for: error)
        } catch let error as DomainError {
            throw ErrorMapping.apiError(for: error)
        } catch {
            throw APIError(.validationFailed, "the body is not valid JSON")
        }
    }

    static func apiError(for error: DecodingError) -> APIError {
        func field(_ path: [any CodingKey]) -> String? {
            path.isEmpty ? nil : path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let name = field(context.codingPath + [key]) ?? key.stringValue
            return APIError(.validationFailed, "\(name) is required", field: name)
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let name = field(context.codingPath)
            return APIError(
                .validationFailed, "\(name ?? "body") must be \(describe(type))", field: name)
        case .dataCorrupted(let context):
            if let name = field(context.codingPath) {
                return APIError(.validationFailed, "\(name) is invalid: \(context.debugDescription)", field: name)
            }
            return APIError(.validationFailed, "the body is not valid JSON")
        @unknown default:
            return APIError(.validationFailed, "the body is not valid JSON")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type: "an integer"
        case is Bool.Type: "a boolean"
        case is Double.Type: "a number"
        default: "of a different type"
        }
    }

    /// A JSON response with `status` and the encoded `value`.
    public static func response(_ value: some Encodable, status: HTTPStatus = .ok) -> HTTPResponse {
        response(encoded: DocumentCoding.encode(value), status: status)
    }

    /// A JSON answer whose body is a document already encoded (`DocumentCoding.encode`): one the write
    /// encoded for the change log, answered as is instead of read and encoded again.
    public static func response(encoded document: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": JSONText.contentType], body: document)
    }
}
