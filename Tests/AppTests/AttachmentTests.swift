import Domain
import Foundation
import Hashing
import Media
import Storage
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// Attachments on shared alarms (docs/attachments.md): upload → download byte-equal, metadata
/// stripped, every refusal named with nothing stored, Range, authorisation per request, dedup, the
/// orphan sweep, the per-route body limit from `Content-Length`.
@Suite("Attachments — photos and PDFs on shared alarms")
struct AttachmentTests {
    struct Setup {
        let f: SharedAlarmFixture
        let alarmID: String
        var h: AppHarness { f.h }
        var path: String { "\(f.g)/alarms/\(alarmID)/attachments" }

        static func make(members: Int = 2, configure: (inout AppConfiguration) -> Void = { _ in }) async throws -> Setup {
            let f = try await SharedAlarmFixture.make(members: members, configure: configure)
            let alarm = try await f.createAlarm()
            return Setup(f: f, alarmID: try #require(alarm["id"] as? String))
        }

        func upload(_ bytes: [UInt8], type: String? = "application/octet-stream", token: String? = nil) async -> Reply {
            await h.sendBytes(.post, path, body: bytes, contentType: type, token: token ?? f.owner.token)
        }

        /// Files under `attachments/` (content-addressed names and leftovers).
        func storedFiles() -> [AttachmentFiles.Entry] {
            AttachmentFiles(dataDirectory: h.directory.path).entries()
        }

        func rowCount() async throws -> Int64 {
            try await h.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM attachments", [])?.int("n") ?? -1 }
        }
    }

    @Test("a JPEG with an EXIF GPS position: stored re-encoded without EXIF, downloaded byte-equal to what is stored")
    func jpegRoundTrip() async throws {
        let s = try await Setup.make()
        let upload = SampleMedia.jpeg(width: 1024, height: 768, gps: true)
        #expect(SampleMedia.exif(upload).value != nil)
        let reply = await s.upload(upload, type: "image/jpeg")
        #expect(reply.status == 201, "\(reply.text)")
        let doc = reply.json
        let id = try #require(doc["id"] as? String)
        #expect(doc["file_type"] as? String == "image/jpeg")
        #expect(doc["owner_kind"] as? String == "shared_alarm")
        #expect(doc["width"] as? Int == 1024 && doc["height"] as? Int == 768)
        let sha = try #require(doc["sha256"] as? String)

        let download = await s.h.send(.get, "\(s.path)/\(id)", token: s.f.members[0].token)
        #expect(download.status == 200)
        let body = download.response.body
        #expect(Hex.encode(SHA256.hash(body)) == sha)
        #expect(doc["file_size_bytes"] as? Int == body.count)
        #expect(!SampleMedia.exif(body).hasExif)
        #expect(!body.contains(sequence: Array("Chronir Test Camera".utf8)))
        #expect(download.header("Content-Type") == "image/jpeg")
        #expect(download.header("ETag") == "\"\(sha)\"")
        #expect(download.header("Cache-Control") == "private, no-cache")
        #expect(download.header("X-Content-Type-Options") == "nosniff")
        #expect(download.header("Content-Disposition") == "inline; filename=\"\(id).jpg\"")

        let thumbnail = await s.h.send(.get, "\(s.path)/\(id)/thumbnail", token: s.f.members[1].token)
        #expect(thumbnail.status == 200 && thumbnail.header("Content-Type") == "image/jpeg")
        #expect(SampleMedia.jpegSize(thumbnail.response.body).map { [$0.width, $0.height] } == [256, 192])

        let again = await s.h.send(.get, "\(s.path)/\(id)", token: s.f.owner.token, headers: [("If-None-Match", "\"\(sha)\"")])
        #expect(again.status == 304 && again.response.body.isEmpty)

        let list = await s.h.send(.get, s.path, token: s.f.members[0].token)
        #expect((list.json["attachments"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])

        // Upload and deletion reach the group's feed through the change log, in their own transactions.
        #expect(await s.h.send(.delete, "\(s.path)/\(id)", token: s.f.owner.token).status == 204)
        let groupID = s.f.groupID
        let changes = try await s.h.database.read { db in
            try db.query(
                "SELECT event, op, entity_id, document FROM change_log WHERE topic = ?1 AND kind = 'attachment' ORDER BY seq",
                [.text("group:\(groupID)")])
        }
        #expect(changes.map { $0.string("event") } == ["attachment_added", "attachment_deleted"])
        #expect(changes.map { $0.string("op") } == ["added", "removed"])
        #expect(changes.allSatisfy { $0.string("entity_id") == id })
        #expect(changes.first?.string("document")?.contains(sha) == true && changes.last?.string("document") == nil)
    }

    @Test("a PDF is stored as uploaded and always served as a download")
    func pdfRoundTrip() async throws {
        let s = try await Setup.make()
        let pdf = SampleMedia.pdf()
        let reply = await s.upload(pdf, type: "application/pdf")
        #expect(reply.status == 201, "\(reply.text)")
        let id = try #require(reply.json["id"] as? String)
        let download = await s.h.send(.get, "\(s.path)/\(id)", token: s.f.members[0].token)
        #expect(download.status == 200 && download.response.body == pdf)
        #expect(download.header("Content-Type") == "application/pdf")
        #expect(download.header("Content-Disposition") == "attachment; filename=\"\(id).pdf\"")
        let thumbnail = await s.h.send(.get, "\(s.path)/\(id)/thumbnail", token: s.f.owner.token)
        #expect(thumbnail.status == 200 && SampleMedia.jpegSize(thumbnail.response.body) != nil)
    }

    @Test("a HEIC photo is decoded here and stored as JPEG")
    func heic() async throws {
        let s = try await Setup.make()
        let reply = await s.upload(SampleMedia.heic(width: 300, height: 200), type: "image/heic")
        #expect(reply.status == 201, "\(reply.text)")
        #expect(reply.json["uploaded_type"] as? String == "image/heic")
        #expect(reply.json["file_type"] as? String == "image/jpeg")
    }

    /// Refused uploads, each with its status and code; none leaves a row or a file.
    enum BadInput: String, CaseIterable, Sendable {
        case executableRenamedJPEG, truncatedJPEG, decompressionBomb, polyglotJPEGAndZIP, typeMismatch, empty

        var bytes: [UInt8] {
            switch self {
            case .executableRenamedJPEG: SampleMedia.elfExecutable
            case .truncatedJPEG:
                Array(SampleMedia.jpeg(width: 800, height: 600, gps: false).prefix(3_000))
            case .decompressionBomb: SampleMedia.pngBomb()
            case .polyglotJPEGAndZIP: SampleMedia.jpeg(gps: false) + [0x50, 0x4B, 0x05, 0x06] + Array(repeating: 0, count: 18)
            case .typeMismatch: SampleMedia.png()
            case .empty: []
            }
        }
        var contentType: String {
            switch self {
            case .decompressionBomb: "image/png"
            case .executableRenamedJPEG, .typeMismatch: "image/jpeg"
            default: "application/octet-stream"
            }
        }
        var expected: (status: Int, code: String) {
            switch self {
            case .executableRenamedJPEG, .typeMismatch, .empty: (415, "CA060")
            case .truncatedJPEG: (422, "CA061")
            case .polyglotJPEGAndZIP: (422, "CA062")
            case .decompressionBomb: (422, "CA063")
            }
        }
    }

    @Test("bad input is refused with a named error and leaves no row and no file", arguments: BadInput.allCases)
    func badInput(_ input: BadInput) async throws {
        let s = try await Setup.make(members: 1)
        let reply = await s.upload(input.bytes, type: input.contentType)
        #expect(reply.status == input.expected.status, "\(reply.text)")
        #expect(reply.errorCode == input.expected.code)
        #expect(try await s.rowCount() == 0)
        #expect(s.storedFiles().isEmpty)
    }

    @Test("Range: one range → 206 with Content-Range; past the end → 416; a multi-range → the whole file")
    func ranges() async throws {
        let s = try await Setup.make(members: 1)
        let pdf = SampleMedia.pdf()
        let id = try #require(await s.upload(pdf).json["id"] as? String)
        let url = "\(s.path)/\(id)"
        let token = s.f.members[0].token
        let first = await s.h.send(.get, url, token: token, headers: [("Range", "bytes=0-9")])
        #expect(first.status == 206 && first.response.body == Array(pdf.prefix(10)))
        #expect(first.header("Content-Range") == "bytes 0-9/\(pdf.count)")
        let tail = await s.h.send(.get, url, token: token, headers: [("Range", "bytes=-6")])
        #expect(tail.status == 206 && tail.response.body == Array(pdf.suffix(6)))
        let open = await s.h.send(.get, url, token: token, headers: [("Range", "bytes=100-")])
        #expect(open.status == 206 && open.response.body == Array(pdf.dropFirst(100)))
        let beyond = await s.h.send(.get, url, token: token, headers: [("Range", "bytes=\(pdf.count)-")])
        #expect(beyond.status == 416 && beyond.header("Content-Range") == "bytes */\(pdf.count)")
        let multi = await s.h.send(.get, url, token: token, headers: [("Range", "bytes=0-1,5-6")])
        #expect(multi.status == 200 && multi.response.body == pdf)
    }

    @Test("downloads are authorised per request: a removed member gets 404, a stranger 404")
    func removedMember() async throws {
        let s = try await Setup.make(members: 2)
        let id = try #require(await s.upload(SampleMedia.png()).json["id"] as? String)
        let member = s.f.members[0]
        #expect(await s.h.send(.get, "\(s.path)/\(id)", token: member.token).status == 200)
        let removed = await s.h.send(.delete, "\(s.f.g)/members/\(member.id)", token: s.f.owner.token)
        #expect(removed.status == 204 || removed.status == 200, "\(removed.text)")
        let after = await s.h.send(.get, "\(s.path)/\(id)", token: member.token)
        #expect(after.status == 404)
        #expect(await s.h.send(.get, "\(s.path)/\(id)/thumbnail", token: member.token).status == 404)
        #expect(await s.h.send(.get, s.path, token: member.token).status == 404)
        let (stranger, _) = try await s.h.register("stranger@example.com")
        #expect(await s.h.send(.get, "\(s.path)/\(id)", token: stranger).status == 404)
    }

    @Test("identical content is stored once: two rows, one file (and one thumbnail)")
    func dedup() async throws {
        let s = try await Setup.make(members: 1)
        let png = SampleMedia.png(width: 200, height: 100)
        let a = await s.upload(png)
        s.h.clock.advance(by: 1)
        let b = await s.upload(png, token: s.f.members[0].token)
        #expect(a.status == 201 && b.status == 201)
        #expect(a.json["sha256"] as? String == b.json["sha256"] as? String)
        #expect(a.json["id"] as? String != b.json["id"] as? String)
        #expect(try await s.rowCount() == 2)
        let files = s.storedFiles()
        #expect(files.count == 2 && files.allSatisfy { !$0.isTemporary })
        #expect(
            files.allSatisfy { entry in
                var info = stat()
                return stat(entry.path, &info) == 0 && info.st_mode & 0o777 == 0o600
            })
    }

    @Test("the orphan sweep removes a file no live row names once it is older than 7 days, and leftover temp files")
    func orphanSweep() async throws {
        let s = try await Setup.make(members: 1)
        let kept = await s.upload(SampleMedia.png(width: 100, height: 100))
        s.h.clock.advance(by: 1)
        let gone = try #require(await s.upload(SampleMedia.pdf()).json["id"] as? String)
        #expect(kept.status == 201)
        #expect(await s.h.send(.delete, "\(s.path)/\(gone)", token: s.f.owner.token).status == 204)
        #expect(await s.h.send(.get, "\(s.path)/\(gone)", token: s.f.owner.token).status == 404)
        let files = AttachmentFiles(dataDirectory: s.h.directory.path)
        #expect(s.storedFiles().count == 4)
        // A write that died between its temp file and the rename.
        let leftover = (files.path(String(repeating: "ab", count: 32)) as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: leftover, withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: leftover + "/.tmp-deadbeef"))
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: Double(s.h.clock.nowMilliseconds()) / 1000)],
            ofItemAtPath: leftover + "/.tmp-deadbeef")
        let grace = AttachmentConfiguration().orphanGraceMilliseconds
        #expect(grace == 7 * 24 * 3_600_000)

        let early = try AttachmentSweep.run(
            files: files, graceMilliseconds: grace, at: s.h.clock.nowMilliseconds() + grace - 1_000, on: s.h.database)
        #expect(early.filesRemoved == 0 && s.storedFiles().count == 5)
        let due = try AttachmentSweep.run(
            files: files, graceMilliseconds: grace, at: s.h.clock.nowMilliseconds() + grace + 1_000, on: s.h.database)
        #expect(due.filesRemoved == 3)  // the PDF, its thumbnail, the temp file
        let left = Set(s.storedFiles().map(\.name))
        let keptSHA = try #require(kept.json["sha256"] as? String)
        let keptThumbnail = try #require((kept.json["thumbnail"] as? [String: Any])?["sha256"] as? String)
        #expect(left == [keptSHA, keptThumbnail])
        let keptID = try #require(kept.json["id"] as? String)
        #expect(await s.h.send(.get, "\(s.path)/\(keptID)", token: s.f.owner.token).status == 200)
    }

    @Test("decodes have a bounded pool of their own; with it full, an upload is 503 and a static file is served")
    func decodePool() async throws {
        let root = TemporaryDirectory(prefix: "public")
        try Data("<h1>ok</h1>".utf8).write(to: URL(fileURLWithPath: root.path + "/index.html"))
        let s = try await Setup.make(members: 1) { $0.publicDirectory = root.path }
        let services = s.h.app.services
        // Structure: not the pool static files and health checks use, nor the hashing one; bounded.
        #expect(services.decoding !== services.workers && services.decoding !== services.hashing)
        let config = AttachmentConfiguration()
        #expect(services.decoding.width == config.decodeThreads && config.decodeThreads == 1)
        #expect(services.decoding.acceptedJobs == config.decodeThreads + config.maxQueuedDecodes)
        // Fill it with decodes that do not finish until released.
        let release = DispatchSemaphore(value: 0)
        let capacity = try #require(services.decoding.acceptedJobs)
        let jobs = (0..<capacity).map { _ in Task { try await services.decoding.run { release.wait() } } }
        #expect(await eventuallyAsync { services.decoding.pendingJobs == capacity })
        let refused = await s.upload(SampleMedia.png())
        #expect(refused.status == 503 && refused.header("Retry-After") == "1", "\(refused.text)")
        #expect(await s.h.send(.get, "/index.html").status == 200)
        for _ in 0..<capacity { release.signal() }
        for job in jobs { try await job.value }
        #expect(await s.upload(SampleMedia.png()).status == 201)
    }

    @Test("the alarm's deletion retires its attachments, and the sweep then removes their files")
    func alarmDeletion() async throws {
        let s = try await Setup.make(members: 1)
        #expect(await s.upload(SampleMedia.png()).status == 201)
        #expect(await s.h.send(.delete, "\(s.f.g)/alarms/\(s.alarmID)", token: s.f.owner.token).status == 204)
        let files = AttachmentFiles(dataDirectory: s.h.directory.path)
        let grace = AttachmentConfiguration().orphanGraceMilliseconds
        let outcome = try AttachmentSweep.run(
            files: files, graceMilliseconds: grace, at: s.h.clock.nowMilliseconds() + grace + 1, on: s.h.database)
        #expect(outcome == AttachmentSweep.Outcome(rowsRetired: 1, filesRemoved: 2, tombstonesDropped: 1))
        #expect(s.storedFiles().isEmpty)
    }

    @Test("Free tier: 403 TIER_REQUIRED; a plain member on plus may upload")
    func tiers() async throws {
        let s = try await Setup.make(members: 1)
        let member = s.f.members[0]
        try await s.h.database.write { db in
            _ = try db.run("UPDATE users SET tier = 'free' WHERE id = ?1", [.text(member.id)])
        }
        let free = await s.upload(SampleMedia.png(), token: member.token)
        #expect(free.status == 403 && free.errorCode == "CA002")
        try await s.h.database.write { db in
            _ = try db.run("UPDATE users SET tier = 'plus' WHERE id = ?1", [.text(member.id)])
        }
        #expect(await s.upload(SampleMedia.png(), token: member.token).status == 201)
    }

    @Test("3 uploads a minute per user (429 with Retry-After), 5 per alarm (409 CA064)")
    func limits() async throws {
        let s = try await Setup.make(members: 1)
        for i in 0..<3 {
            #expect(await s.upload(SampleMedia.png(width: 10 + i, height: 10)).status == 201)
            s.h.clock.advance(by: 1_000)
        }
        let fourth = await s.upload(SampleMedia.png(width: 20, height: 10))
        #expect(fourth.status == 429 && fourth.errorCode == "CA020")
        #expect(fourth.header("Retry-After") == "57")  // the first upload leaves the window 60 s after it
        s.h.clock.advance(by: 57_000)
        #expect(await s.upload(SampleMedia.png(width: 21, height: 10)).status == 201)
        #expect(await s.upload(SampleMedia.png(width: 22, height: 10), token: s.f.members[0].token).status == 201)
        let sixth = await s.upload(SampleMedia.png(width: 23, height: 10), token: s.f.members[0].token)
        #expect(sixth.status == 409 && sixth.errorCode == "CA064")
        #expect(try await s.rowCount() == 5)
    }

    @Test("delete: the uploader, the owner or an admin; another member gets 403")
    func deletePermissions() async throws {
        let s = try await Setup.make(members: 2)
        let id = try #require(await s.upload(SampleMedia.png(), token: s.f.members[0].token).json["id"] as? String)
        let other = await s.h.send(.delete, "\(s.path)/\(id)", token: s.f.members[1].token)
        #expect(other.status == 403 && other.errorCode == "CA007")
        #expect(await s.h.send(.delete, "\(s.path)/\(id)", token: s.f.members[0].token).status == 204)
        #expect(await s.h.send(.delete, "\(s.path)/\(id)", token: s.f.members[0].token).status == 404)
    }

    @Test("a body over the limit is 413 PHOTO_TOO_LARGE; at the limit it is decoded")
    func bodyLimitInHandler() async throws {
        let png = SampleMedia.png()
        let h = try AppHarness(defaultTier: .premium) { $0.attachments.maxFileBytes = png.count }
        let owner = try await h.register("o@example.com")
        let group = try await h.createGroup(token: owner.token)
        let alarm = try await h.expect(
            201, .post, "/v1/groups/\(group)/alarms",
            json: #"{"title":"Filter",\#(SharedAlarmFixture.dailyTen),"completion_rule":"any","assigned_to_uids":[]}"#,
            token: owner.token)
        let path = "/v1/groups/\(group)/alarms/\(alarm.json["id"] as? String ?? "")/attachments"
        #expect(await h.sendBytes(.post, path, body: png, contentType: nil, token: owner.token).status == 201)
        let over = await h.sendBytes(.post, path, body: png + [0], contentType: nil, token: owner.token)
        #expect(over.status == 413 && over.errorCode == "CA009")
    }

    @Test("through the transport: Content-Length over the upload limit is 413 CA009 before any body byte is sent")
    func contentLengthRefusedBeforeTheBody() async throws {
        let h = try AppHarness(defaultTier: .premium)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 1
        configuration.limits = Application.limits(configuration.limits, config: h.app.services.config)
        #expect(configuration.limits.maxUploadBodyBytes == 10 * 1024 * 1024)
        let server = HTTPServer(configuration: configuration, responder: h.app)
        let port = try server.start()
        defer { server.shutdown() }
        let uuid = "00000000-0000-4000-8000-000000000000"
        let (upload, json, atLimit) = try await blocking {
            let client = try LoopbackClient(port: port)
            defer { client.close() }
            // Head only: the answer comes without a single body byte.
            try client.send(
                "POST /v1/groups/\(uuid)/alarms/\(uuid)/attachments HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Length: \(10 * 1024 * 1024 + 1)\r\n\r\n")
            let upload = try client.readResponse()
            // The JSON routes keep 1 MiB.
            let other = try LoopbackClient(port: port)
            defer { other.close() }
            try other.send("POST /v1/groups HTTP/1.1\r\nHost: x\r\nContent-Length: \(1024 * 1024 + 1)\r\n\r\n")
            let json = try other.readResponse()
            // Exactly at the upload limit the size passes; the head is then authorised before the body
            //: without a token, 401 at once, the body never read.
            let third = try LoopbackClient(port: port)
            defer { third.close() }
            try third.send(
                "POST /v1/groups/\(uuid)/alarms/\(uuid)/attachments HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Length: \(10 * 1024 * 1024)\r\nExpect: 100-continue\r\n\r\n")
            let interim = try third.readResponse()
            return (upload, json, interim)
        }
        #expect(upload.status == 413)
        #expect(
            (try? JSONSerialization.jsonObject(with: Data(upload.body)) as? [String: Any])?["error"].flatMap {
                ($0 as? [String: Any])?["code"] as? String
            } == "CA009")
        #expect(json.status == 413)
        #expect(String(decoding: json.body, as: UTF8.self).contains("CA023"))
        #expect(atLimit.status == 401)
    }
}

extension AppHarness {
    /// A request with a raw body (an upload) and its `Content-Type`.
    func sendBytes(_ method: HTTPMethod, _ target: String, body: [UInt8], contentType: String?, token: String?) async -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "test")
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let request = HTTPRequest(head: HTTPRequestHead(method: method, target: target, headers: headers), body: body)
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            app.respond(
                to: request, context: RequestContext(remoteAddress: "127.0.0.1", connectionID: 1),
                sink: ResponseSink { continuation.resume(returning: $0) })
        }
        return Reply(response: response)
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(sequence: [UInt8]) -> Bool {
        guard sequence.count <= count else { return false }
        for i in 0...(count - sequence.count) where self[i..<(i + sequence.count)].elementsEqual(sequence) { return true }
        return false
    }
}

@Suite("Attachments — failures leave nothing half-stored")
struct AttachmentFailureTests {
    @Test("the file store failing (its directory is not a directory) answers 500 and writes no row")
    func storeFailure() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: s.h.directory.path + "/attachments"))
        let reply = await s.upload(SampleMedia.png())
        #expect(reply.status == 500 && reply.errorCode == "CA026")
        #expect(try await s.rowCount() == 0)
    }

    @Test("a full disk is 503 with Retry-After, like the database's")
    func fullDisk() {
        let mapped = ErrorMapping.apiError(for: AttachmentFiles.Failure(call: "write x", errno: ENOSPC))
        #expect(mapped.code == .serviceUnavailable && mapped.retryAfterSeconds == 5)
        #expect(ErrorMapping.apiError(for: AttachmentFiles.Failure(call: "open x", errno: EACCES)).code == .internalError)
    }

    @Test("a client that disconnects mid-upload leaves no row and no file, and the server serves the next one")
    func disconnectMidUpload() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 1
        configuration.limits = Application.limits(configuration.limits, config: s.h.app.services.config)
        let server = HTTPServer(configuration: configuration, responder: s.h.app)
        let port = try server.start()
        defer { server.shutdown() }
        let png = SampleMedia.png(width: 300, height: 300)
        let path = s.path
        let token = s.f.owner.token
        let status = try await blocking {
            let client = try LoopbackClient(port: port)
            try client.send(
                "POST \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: image/png\r\n"
                    + "Content-Length: \(png.count)\r\n\r\n")
            try client.send(Array(png.prefix(png.count / 2)))
            client.close()
            let next = try LoopbackClient(port: port)
            defer { next.close() }
            return try next.request("GET", path, headers: [("Authorization", "Bearer \(token)")]).status
        }
        #expect(status == 200)
        #expect(try await s.rowCount() == 0)
        #expect(s.storedFiles().isEmpty)
    }
}
