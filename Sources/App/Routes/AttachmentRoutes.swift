import Domain
import Glibc
import Logging
import Media
import Storage
import Store
import Wire

/// `/v1/groups/{id}/alarms/{aid}/attachments…`: photos and PDFs on shared alarms (issue 20;
/// docs/attachments.md). Any active member on the plus or premium tier uploads (Free: 403
/// TIER_REQUIRED) and every active member reads — authorised on every request, so a removed member's
/// next download is 404; the uploader, the owner or an admin deletes. Uploads are the raw file as the
/// body; the content decides the type (`MediaProcessor`), images are stored re-encoded without metadata.
enum AttachmentRoutes {
    static let collection = "/v1/groups/{id}/alarms/{aid}/attachments"
    /// The upload route as an `HTTPLimits.uploadPaths` pattern: the transport gives its body
    /// `AttachmentConfig.maxFileBytes` instead of the 1 MiB JSON limit, checked from `Content-Length`.
    static let uploadPathPattern = "/v1/groups/*/alarms/*/attachments"

    static func register(in router: inout Router<Handler>, services: Services) {
        let files = AttachmentFiles(dataDirectory: services.config.dataDirectory)
        let processor = MediaProcessor(limits: services.config.attachments.media)
        router.add(.post, collection, .async { request in try await upload(request, services, files, processor) })
        router.add(.get, collection, .async { request in try await list(request, services) })
        router.add(
            .get, collection + "/{attachment_id}",
            .async { request in try await download(request, services, files, thumbnail: false) })
        router.add(
            .get, collection + "/{attachment_id}/thumbnail",
            .async { request in try await download(request, services, files, thumbnail: true) })
        router.add(.delete, collection + "/{attachment_id}", .async { request in try await delete(request, services) })
    }

    static func upload(
        _ request: Request, _ services: Services, _ files: AttachmentFiles, _ processor: MediaProcessor
    ) async throws -> HTTPResponse {
        // The body is the file: it counts one write against the budget, not its bytes (uploads have their own limits).
        let user = try await services.authenticate(request, chargeBodyBytes: false).user
        let groupID = try request.parameter("id")
        let alarmID = try request.parameter("aid")
        let limits = services.config.attachments
        guard user.tier != .free else { throw DomainError.tierRequired("attachments need the plus or premium tier") }
        guard request.http.body.count <= limits.maxFileBytes else { throw tooLarge(limits.maxFileBytes) }
        let now = services.clock.nowMilliseconds()
        // Membership, the alarm, the per-alarm and per-minute limits: before the expensive decode.
        try await services.database.read { db in
            try AttachmentStore.checkUpload(
                groupID: groupID, alarmID: alarmID, userID: user.id, maxPerAlarm: limits.maxPerAlarm,
                uploadsPerMinute: limits.uploadsPerMinute, at: now, on: db)
        }
        let body = try await uploadedFile(request, services, files)
        guard body.count <= limits.maxFileBytes else { throw tooLarge(limits.maxFileBytes) }
        let declared = request.headers[first: "content-type"]
        let media = try await services.workers.run { try processor.process(file: body.path, declaredType: declared) }
        // A PDF is stored as uploaded: the upload's file itself (hard-linked), else the re-encoded bytes.
        let storeFile: @Sendable () throws -> String = {
            media.type == .pdf ? try files.store(file: body.path, now: now) : try files.store(media.bytes, now: now)
        }
        // Files first (temp, fsync, rename), then the row: a committed row always has its files.
        let (name, thumbnailName) = try await services.workers.run { (try storeFile(), try files.store(media.thumbnail, now: now)) }
        let attachment = Attachment(
            id: AttachmentStore.newID(), ownerKind: .sharedAlarm, ownerID: alarmID, groupID: groupID, uploadedBy: user.id,
            fileType: media.type.rawValue, uploadedType: media.uploadedType.rawValue,
            sizeBytes: Int64(media.type == .pdf ? body.count : media.bytes.count),
            width: media.width, height: media.height, sha256: name,
            thumbnail: Attachment.Thumbnail(sha256: thumbnailName, width: media.thumbnailWidth, height: media.thumbnailHeight),
            createdAt: Timestamp(milliseconds: now))
        try await services.database.write { db in
            // The orphan sweep removes unreferenced files inside a write transaction too, so between
            // the store above and this transaction it may have taken an identical old file: put it back.
            if !files.exists(name) { _ = try storeFile() }
            if !files.exists(thumbnailName) { try files.store(media.thumbnail, now: now) }
            try AttachmentStore.insert(
                attachment, maxPerAlarm: limits.maxPerAlarm, uploadsPerMinute: limits.uploadsPerMinute, on: db)
        }
        return JSONBody.response(attachment, status: .created)
    }

    /// The upload's body as a file: the one the transport streamed it to (`<attachments>/.tmp-*`), or one
    /// a body built in memory is staged to. Removed when the request (or the returned object) is released;
    /// read from there, never held whole.
    static func uploadedFile(_ request: Request, _ services: Services, _ files: AttachmentFiles) async throws -> HTTPBodyFile {
        if let file = request.http.bodyFile { return file }
        let bytes = request.http.body
        return try await services.workers.run { try files.stage(bytes) }
    }

    static func tooLarge(_ limit: Int) -> APIError {
        APIError(.photoTooLarge, "an attachment may be at most \(limit) bytes")
    }

    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        let attachments = try await services.database.read { db in
            try AttachmentStore.list(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
        }
        return JSONBody.response(AttachmentList(attachments: attachments))
    }

    struct AttachmentList: Encodable {
        var attachments: [Attachment]
    }

    /// The file or its thumbnail: `ETag` (the SHA-256), `If-None-Match` → 304, one `Range` → 206,
    /// `Cache-Control: private, no-cache` (a cache must ask again, and the server checks membership again),
    /// `X-Content-Type-Options: nosniff`, a sandboxing CSP, and `Content-Disposition` — `attachment` for
    /// PDFs, always, `inline` for images.
    static func download(_ request: Request, _ services: Services, _ files: AttachmentFiles, thumbnail: Bool) async throws
        -> HTTPResponse
    {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        let attachmentID = try request.parameter("attachment_id")
        let attachment = try await services.database.read { db in
            try AttachmentStore.attachment(
                groupID: groupID, alarmID: alarmID, attachmentID: attachmentID, userID: userID, on: db)
        }
        let name = thumbnail ? attachment.thumbnail.sha256 : attachment.sha256
        let type = thumbnail ? MediaType.jpeg.rawValue : attachment.fileType
        let etag = "\"\(name)\""
        var headers: HTTPHeaders = [
            "ETag": etag, "Cache-Control": "private, no-cache", "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox", "Accept-Ranges": "bytes",
        ]
        let disposition = !thumbnail && attachment.fileType == MediaType.pdf.rawValue ? "attachment" : "inline"
        let suffix = thumbnail ? "-thumbnail.jpg" : fileExtension(type)
        headers.add(name: "Content-Disposition", value: "\(disposition); filename=\"\(attachment.id)\(suffix)\"")
        if let match = request.headers[first: "if-none-match"],
            match.split(separator: ",").contains(where: { tag in
                let trimmed = tag.trimmingSpaces()
                return trimmed == etag || trimmed == "W/\(etag)" || trimmed == "*"
            })
        {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        // The body is sent from the open file by the transport (sendfile, or chunks through TLS), never read here.
        guard let (descriptor, length) = try await services.workers.run({ try files.openForReading(name) }) else {
            services.logger.error("attachment file missing", metadata: ["attachment": "\(attachment.id)", "file": "\(name)"])
            throw APIError(.internalError, "internal error")
        }
        let whole = HTTPFileRegion(descriptor: descriptor, offset: 0, count: length) { close($0) }
        headers.add(name: "Content-Type", value: type)
        switch ByteRange.resolve(request.headers[first: "range"], length: length) {
        case .whole:
            return HTTPResponse(status: .ok, headers: headers, bodyFile: whole)
        case .partial(let range):
            // The range holds the whole file's region, which owns (and closes) the descriptor.
            let part = HTTPFileRegion(descriptor: descriptor, offset: range.first, count: range.count) { _ in
                withExtendedLifetime(whole) {}
            }
            headers.add(name: "Content-Range", value: "bytes \(range.first)-\(range.last)/\(length)")
            return HTTPResponse(status: .partialContent, headers: headers, bodyFile: part)
        case .unsatisfiable:
            var error = APIError(
                .invalidRequest, "the range starts past the end of the file",
                headers: ["Content-Range": "bytes */\(length)"])
            error.code.status = .rangeNotSatisfiable
            throw error
        }
    }

    static func fileExtension(_ type: String) -> String {
        switch type {
        case MediaType.png.rawValue: ".png"
        case MediaType.pdf.rawValue: ".pdf"
        default: ".jpg"
        }
    }

    static func delete(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        let attachmentID = try request.parameter("attachment_id")
        return try await services.writeNoContent { now, db in
            try AttachmentStore.delete(
                groupID: groupID, alarmID: alarmID, attachmentID: attachmentID, actorID: userID, at: now, on: db)
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
