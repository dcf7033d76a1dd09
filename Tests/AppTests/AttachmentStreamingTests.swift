import Foundation
import Hashing
import Storage
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// Attachments through the real transport as the server runs it (`ServerConfiguration.uploadDirectory`
/// = the store's root): the upload streamed to a temporary file and stored from it, downloads sent from
/// the file (whole and ranges), and a disconnect mid-body leaving no temporary file and no row.
@Suite("Attachments — streamed to and served from files")
struct AttachmentStreamingTests {
    /// A server on the harness's application, configured like `chronir-server`'s.
    static func serve(_ s: AttachmentTests.Setup) throws -> (HTTPServer, Int) {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 1
        configuration.limits = Application.limits(configuration.limits, config: s.h.app.services.config)
        configuration.uploadDirectory = AttachmentFiles(dataDirectory: s.h.directory.path).root
        let server = HTTPServer(configuration: configuration, responder: s.h.app)
        return (server, try server.start())
    }

    /// A valid PDF of about `size` bytes (an unreferenced stream pads it).
    static func pdf(size: Int) -> [UInt8] {
        let base = SampleMedia.pdf()
        let eof = Array("%%EOF".utf8)
        guard let end = (0...(base.count - eof.count)).last(where: { Array(base[$0..<($0 + eof.count)]) == eof }) else { return base }
        let padding =
            Array("9 0 obj\n<< /Length \(size) >>\nstream\n".utf8) + [UInt8](repeating: 0x41, count: size)
            + Array("\nendstream\nendobj\n".utf8)
        return Array(base[..<end]) + padding + Array(base[end...])
    }

    @Test("a 3 MB PDF: streamed to a file, stored from it (hard-linked), downloaded whole and by range from the file")
    func pdfRoundTrip() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        let (server, port) = try Self.serve(s)
        defer { server.shutdown() }
        let pdf = Self.pdf(size: 3_000_000)
        let path = s.path
        let token = s.f.owner.token
        let (created, whole, part, thumbnail) = try await blocking {
            let client = try LoopbackClient(port: port)
            defer { client.close() }
            let auth = ("Authorization", "Bearer \(token)")
            let created = try client.request(
                "POST", path, headers: [("Host", "x"), auth, ("Content-Type", "application/pdf")], body: pdf)
            let id = (try? JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])?["id"] as? String ?? ""
            let whole = try client.request("GET", "\(path)/\(id)", headers: [("Host", "x"), auth])
            let part = try client.request("GET", "\(path)/\(id)", headers: [("Host", "x"), auth, ("Range", "bytes=-100")])
            let thumbnail = try client.request("GET", "\(path)/\(id)/thumbnail", headers: [("Host", "x"), auth])
            return (created, whole, part, thumbnail)
        }
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        #expect(whole.status == 200 && whole.body == pdf)
        #expect(LoopbackClient.value(of: "Content-Disposition", in: whole.headers)?.hasPrefix("attachment;") == true)
        #expect(part.status == 206 && part.body == Array(pdf.suffix(100)))
        #expect(LoopbackClient.value(of: "Content-Range", in: part.headers) == "bytes \(pdf.count - 100)-\(pdf.count - 1)/\(pdf.count)")
        #expect(thumbnail.status == 200 && thumbnail.body.starts(with: [0xFF, 0xD8, 0xFF]))
        // The stored file is the upload (content address = its SHA-256); the temporary file is gone.
        let files = s.storedFiles()
        #expect(files.contains { $0.name == Hex.encode(SHA256.hash(pdf)) })
        #expect(await eventually { s.storedFiles().allSatisfy { !$0.isTemporary } })
        #expect(try await s.rowCount() == 1)
    }

    @Test("a refused upload (a polyglot) leaves no row and no file, the temporary one included")
    func refusedUpload() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        let (server, port) = try Self.serve(s)
        defer { server.shutdown() }
        let polyglot = SampleMedia.png() + [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 18)
        let path = s.path
        let token = s.f.owner.token
        let reply = try await blocking {
            try LoopbackClient.request(
                port: port, "POST", path, headers: [("Host", "x"), ("Authorization", "Bearer \(token)")], body: polyglot)
        }
        #expect(reply.status == 422)
        #expect(await eventually { s.storedFiles().isEmpty })
        #expect(try await s.rowCount() == 0)
    }

    @Test("a client that disconnects mid-body: the temporary file is removed, no row, and the server goes on")
    func disconnectMidBody() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        let (server, port) = try Self.serve(s)
        defer { server.shutdown() }
        let pdf = Self.pdf(size: 2_000_000)
        let path = s.path
        let token = s.f.owner.token
        let client = try LoopbackClient(port: port)
        try client.send(
            "POST \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(pdf.count)\r\n\r\n")
        try client.send(Array(pdf.prefix(pdf.count / 2)))
        // The half body is on disk, not in memory: one temporary file in the store's root.
        #expect(await eventually { s.storedFiles().filter(\.isTemporary).count == 1 })
        client.close()
        #expect(await eventually { s.storedFiles().isEmpty })
        let status = try await blocking {
            try LoopbackClient.request(port: port, "GET", path, headers: [("Host", "x"), ("Authorization", "Bearer \(token)")]).status
        }
        #expect(status == 200)
        #expect(try await s.rowCount() == 0)
    }

    @Test("an upload is authenticated and authorised from its head, before a byte of its body is stored")
    func authorisedFromTheHead() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1) { $0.attachments.userQuotaBytes = 512 * 1024 }
        let (server, port) = try Self.serve(s)
        defer { server.shutdown() }
        let (stranger, _) = try await s.h.register("stranger@example.com", name: "Stranger")
        let free = s.f.members[0]
        try await s.h.database.write { db in
            _ = try db.run("UPDATE users SET tier = 'free' WHERE id = ?1", [.text(free.id)])
        }
        let path = s.path
        // (token, what the head alone must be answered with): none, a non-member, the free tier, past the quota.
        let cases: [(String?, Int, String)] = [
            (nil, 401, "\"error\""), (stranger, 404, "\"error\""), (free.token, 403, "CA002"), (s.f.owner.token, 409, "CA065"),
        ]
        let root = AttachmentFiles(dataDirectory: s.h.directory.path).root
        for (token, status, code) in cases {
            let reply = try await blocking {
                let client = try LoopbackClient(port: port)
                defer { client.close() }
                let auth = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
                // The head and the first 16 KiB of a 1 MiB body; the rest is never sent: the answer must
                // come from the head alone.
                try client.send(
                    "POST \(path) HTTP/1.1\r\nHost: x\r\n\(auth)Content-Type: image/png\r\nContent-Length: \(1 << 20)\r\n\r\n")
                try client.send([UInt8](repeating: 0x41, count: 16 * 1024))
                return try client.readResponse()
            }
            #expect(reply.status == status, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(String(decoding: reply.body, as: UTF8.self).contains(code))
            #expect(LoopbackClient.value(of: "Connection", in: reply.headers) == "close")
            // Nothing reached the disk: no temporary file was made for the body.
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
            #expect(entries.isEmpty, "\(entries)")
        }
        #expect(try await s.rowCount() == 0)
    }
}
