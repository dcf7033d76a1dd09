import Foundation
import Testing
import Wire

@testable import App

/// `Public/openapi.yaml` describes exactly the routes the router serves: every (method, template)
/// registered has an operation, and every operation names a registered route.
@Suite("API description — Public/openapi.yaml matches the router")
struct OpenAPIDocumentTests {
    /// The repository's `Public/` directory (this file is `Tests/AppTests/…`).
    static let publicDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Public").path

    static func document() throws -> String {
        try String(contentsOfFile: publicDirectory + "/openapi.yaml", encoding: .utf8)
    }

    @Test("every route is documented and every documented operation is routed")
    func routesMatchDocument() throws {
        let h = try AppHarness()
        let served = Set(h.app.routes.map { "\($0.method.rawValue) \($0.template)" })
        let documented = try OpenAPIPaths.operations(in: Self.document())
        #expect(served.count > 30)  // the whole API, not an empty router
        let undocumented = served.subtracting(documented).sorted()
        let unrouted = documented.subtracting(served).sorted()
        #expect(undocumented.isEmpty, "routes missing from Public/openapi.yaml: \(undocumented)")
        #expect(unrouted.isEmpty, "operations in Public/openapi.yaml that no route serves: \(unrouted)")
    }

    @Test("every error name the server can send is in the document's Error schema")
    func errorNames() throws {
        let yaml = try Self.document()
        let start = try #require(yaml.range(of: "\n    Error:\n"))
        let end = try #require(yaml.range(of: "\n            message:", range: start.upperBound..<yaml.endIndex))
        let listed = Set(
            yaml[start.upperBound..<end.lowerBound].split(separator: "\n")
                .compactMap { line -> String? in
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    return trimmed.hasPrefix("- ") ? String(trimmed.dropFirst(2)) : nil
                })
        let missing = ErrorCode.all.map(\.name).filter { !listed.contains($0) }
        #expect(missing.isEmpty, "error names missing from components.schemas.Error: \(missing)")
    }

    @Test("the document is served at /openapi.yaml as YAML")
    func served() async throws {
        let h = try AppHarness(publicDirectory: Self.publicDirectory)
        let reply = await h.send(.get, "/openapi.yaml")
        #expect(reply.status == 200)
        #expect(reply.response.headers[first: "content-type"] == "application/yaml; charset=utf-8")
        #expect(reply.text == (try Self.document()))
    }

    @Test("the minimal reader finds paths and methods, and refuses shapes it does not understand")
    func reader() throws {
        let yaml = """
            openapi: 3.1.0
            paths:
              /a:
                parameters: []
                get:
                  responses: {}
                post:
                  summary: x
              /b/{id}:
                delete:
                  responses: {}
            components:
              schemas: {}
            """
        #expect(try OpenAPIPaths.operations(in: yaml) == ["GET /a", "POST /a", "DELETE /b/{id}"])
        #expect(throws: OpenAPIPaths.Unsupported.self) { try OpenAPIPaths.operations(in: "paths: {}\n") }
        #expect(throws: OpenAPIPaths.Unsupported.self) {
            try OpenAPIPaths.operations(in: "paths:\n  \"/quoted\":\n    get: {}\n")
        }
        #expect(throws: OpenAPIPaths.Unsupported.self) { try OpenAPIPaths.operations(in: "paths:\n  /a: {get: {}}\n") }
    }
}

/// Reads the (method, path) pairs of an OpenAPI document's `paths` in block style, which is how
/// `Public/openapi.yaml` is written: `paths:` at column 0, each path at two spaces, each operation
/// key at four. Anything else in that region (flow mappings, quoted keys, other indents) throws
/// rather than being skipped, so the check cannot silently pass on a document it misread.
/// Hand-written instead of a YAML package: only these two levels matter, and a test-only
/// dependency for them would cost a package resolution for every build.
enum OpenAPIPaths {
    struct Unsupported: Error, CustomStringConvertible {
        var line: String
        var description: String { "unsupported line in paths: \(line)" }
    }

    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
    /// Path-item keys that are not operations.
    static let pathItemFields: Set<String> = ["summary", "description", "servers", "parameters", "$ref"]

    static func operations(in yaml: String) throws -> Set<String> {
        var result = Set<String>()
        var inPaths = false
        var currentPath: String?
        for raw in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let indent = line.prefix { $0 == " " }.count
            if indent == 0 {
                if inPaths { break }  // the next top-level key ends `paths`
                if trimmed.hasPrefix("paths:") {
                    guard trimmed == "paths:" else { throw Unsupported(line: line) }
                    inPaths = true
                }
                continue
            }
            guard inPaths else { continue }
            if indent == 2 {
                guard trimmed.hasPrefix("/"), trimmed.hasSuffix(":") else { throw Unsupported(line: line) }
                currentPath = String(trimmed.dropLast())
            } else if indent == 4 {
                guard let path = currentPath, let colon = trimmed.firstIndex(of: ":") else {
                    throw Unsupported(line: line)
                }
                let key = String(trimmed[..<colon])
                if methods.contains(key) {
                    result.insert("\(key.uppercased()) \(path)")
                } else if !pathItemFields.contains(key) {
                    throw Unsupported(line: line)
                }
            }
        }
        guard !result.isEmpty else { throw Unsupported(line: "no operations found") }
        return result
    }
}
