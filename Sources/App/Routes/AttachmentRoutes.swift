import Domain
import Glibc
import Logging
import Media
import Storage
import Store
import Wire

/// `…/attachments` on shared alarms, personal alarms and shared completions
/// (docs/attachments.md): one pipeline for the three owners (`Owner`), which differ only in how a request
/// names the owner and who may do what (`AttachmentStore.access`). Uploads are the raw file as the body;
/// the content decides the type (`MediaProcessor`), images are stored re-encoded without metadata. Reads
/// are authorised on every request, so a removed member's next download is 404.
enum AttachmentRoutes {
    /// One kind of owner: where its routes live and how a request names it.
    struct Owner: Sendable {
        /// The collection's route template; `/{attachment_id}` and `/{attachment_id}/thumbnail` hang below it.
        var collection: String
        /// The upload route as an `HTTPLimits.uploadPaths` pattern: the transport gives its body
        /// `AttachmentConfiguration.maxFileBytes` instead of the 1 MiB JSON limit, checked from `Content-Length`.
        var uploadPathPattern: String
        /// The owner the request's path names, for the authenticated caller `userID`.
        var named: @Sendable (_ request: Request, _ userID: String) throws -> AttachmentStore.Owner
    }

    /// A shared alarm's: every active member uploads; the uploader, the owner or an admin deletes.
    static let sharedAlarm = Owner(
        collection: "/v1/groups/{id}/alarms/{aid}/attachments", uploadPathPattern: "/v1/groups/*/alarms/*/attachments"
    ) { request, _ in .sharedAlarm(groupID: try request.parameter("id"), alarmID: try request.parameter("aid")) }

    /// A personal alarm's: its account alone.
    static let personalAlarm = Owner(
        collection: "/v1/me/alarms/{alarm_id}/attachments", uploadPathPattern: "/v1/me/alarms/*/attachments"
    ) { request, userID in
        .personalAlarm(userID: userID, alarmID: try PersonalAlarmRules.alarmID(try request.parameter("alarm_id")))
    }

    /// A shared completion's: the member who answered uploads; every active member reads; the uploader,
    /// the owner or an admin deletes.
    static let sharedCompletion = Owner(
        collection: "/v1/groups/{id}/completions/{completion_id}/attachments",
        uploadPathPattern: "/v1/groups/*/completions/*/attachments"
    ) { request, _ in
        .sharedCompletion(groupID: try request.parameter("id"), completionID: try request.parameter("completion_id"))
    }

    static let owners = [sharedAlarm, personalAlarm, sharedCompletion]

    /// Every upload route's `HTTPLimits.uploadPaths` pattern.
    static var uploadPathPatterns: [String] { owners.map(\.uploadPathPattern) }

    static func register(in router: inout Router<Handler>, services: Services) {
        let files = AttachmentFiles(dataDirectory: services.config.dataDirectory)
        let processor = MediaProcessor(limits: services.config.attachments.media)
        for owner in owners {
            let item = owner.collection + "/{attachment_id}"
            router.add(.post, owner.collection, .async { request in try await upload(request, owner, services, files, processor) })
            router.add(.get, owner.collection, .async { request in try await list(request, owner, services) })
            router.add(.get, item, .async { request in try await download(request, owner, services, files, thumbnail: false) })
            router.add(
                .get, item + "/thumbnail", .async { request in try await download(request, owner, services, files, thumbnail: true) })
            router.add(.delete, item, .async { request in try await delete(request, owner, services) })
        }
    }

    /// Each upload route's admission (`Application.admitBody`), keyed by its template: `authorise` from
    /// the request head, with `Content-Length` as the incoming size, before the transport stores a byte
    /// of the body. Not charged against the write budget: the upload itself is, once its body is in.
    static func admissions(services: Services) -> [String: @Sendable (Request) async throws -> Void] {
        var admissions: [String: @Sendable (Request) async throws -> Void] = [:]
        for owner in owners {
            admissions[owner.collection] = { request in
                let declared = request.headers[first: "content-length"].flatMap { Int($0) } ?? 0
                _ = try await authorise(request, owner, services, incomingBytes: declared, chargeWrite: false)
            }
        }
        return admissions
    }

    /// Whether the caller may upload `incomingBytes` here, and who and where: authenticated (one write
    /// charged against the budget when `chargeWrite`, not the body's bytes: uploads have their own
    /// limits), the owner the path names and the caller's access to it, a paying tier, and the per-owner,
    /// per-minute and quota limits (`AttachmentStore.checkUpload`). Run twice: from the head before the
    /// body is read (`admissions`), and with the body's real size before the expensive decode.
    static func authorise(
        _ request: Request, _ route: Owner, _ services: Services, incomingBytes: Int, chargeWrite: Bool
    ) async throws -> (user: User, owner: AttachmentStore.Owner) {
        let user = try await services.authenticate(request, exemptFromWriteBudget: !chargeWrite, chargeBodyBytes: false).user
        let owner = try route.named(request, user.id)
        try await services.requireTier(user, .plus, "attachments need the plus or premium tier")
        let limits = services.config.attachments.storeLimits
        let now = services.clock.nowMilliseconds()
        try await services.database.read { db in
            try AttachmentStore.checkUpload(
                owner, userID: user.id, incomingBytes: Int64(incomingBytes), limits: limits, at: now, on: db)
        }
        return (user, owner)
    }

    static func upload(
        _ request: Request, _ route: Owner, _ services: Services, _ files: AttachmentFiles, _ processor: MediaProcessor
    ) async throws -> HTTPResponse {
        let config = services.config.attachments
        let limits = config.storeLimits
        // The body as a file (the transport streamed it there once the head was admitted): never held whole.
        let body = try await uploadedFile(request, services, files)
        guard body.count <= config.maxFileBytes else { throw tooLarge(config.maxFileBytes) }
        // Again with the real size, before the expensive decode (the state may have changed meanwhile).
        let (user, owner) = try await authorise(request, route, services, incomingBytes: body.count, chargeWrite: true)
        let now = services.clock.nowMilliseconds()
        let declared = request.headers[first: "content-type"]
        let media = try await services.decoding.run { try processor.process(file: body.path, declaredType: declared) }
        // A PDF is stored as uploaded: the upload's file itself (hard-linked), else the re-encoded bytes.
        let storeFile: @Sendable () throws -> String = {
            media.type == .pdf ? try files.store(file: body.path, now: now) : try files.store(media.bytes, now: now)
        }
        // Files first (temp, fsync, rename), then the row: a committed row always has its files.
        let (name, thumbnailName) = try await services.workers.run { (try storeFile(), try files.store(media.thumbnail, now: now)) }
        let attachment = Attachment(
            id: AttachmentStore.newID(), ownerKind: owner.kind, ownerID: owner.ownerID, groupID: owner.groupID,
            uploadedBy: user.id, fileType: media.type.rawValue, uploadedType: media.uploadedType.rawValue,
            sizeBytes: Int64(media.type == .pdf ? body.count : media.bytes.count),
            width: media.width, height: media.height, sha256: name,
            thumbnail: Attachment.Thumbnail(sha256: thumbnailName, width: media.thumbnailWidth, height: media.thumbnailHeight),
            createdAt: Timestamp(milliseconds: now))
        try await services.database.write { db in
            // The orphan sweep removes unreferenced files inside a write transaction too, so between
            // the store above and this transaction it may have taken an identical old file: put it back.
            if !files.exists(name) { _ = try storeFile() }
            if !files.exists(thumbnailName) { try files.store(media.thumbnail, now: now) }
            try AttachmentStore.insert(attachment, on: owner, limits: limits, on: db)
        }
        return JSONBody.response(attachment, status: .created)
    }

    /// The one place an upload's bytes are taken from the request: the file the transport streamed
    /// the body to (`<attachments>/.tmp-*`), or one a body built in memory is staged to. Removed when
    /// the request (or the returned object) is released; read from there, never held whole.
    static func uploadedFile(_ request: Request, _ services: Services, _ files: AttachmentFiles) async throws -> HTTPBodyFile {
        if let file = request.http.bodyFile { return file }
        let bytes = request.http.body
        return try await services.workers.run { try files.stage(bytes) }
    }

    static func tooLarge(_ limit: Int) -> APIError {
        APIError(.photoTooLarge, "an attachment may be at most \(limit) bytes")
    }

    static func list(_ request: Request, _ route: Owner, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let owner = try route.named(request, userID)
        let attachments = try await services.database.read { db in try AttachmentStore.list(owner, userID: userID, on: db) }
        return JSONBody.response(AttachmentList(attachments: attachments))
    }

    struct AttachmentList: Encodable {
        var attachments: [Attachment]
    }

    /// The file or its thumbnail: `ETag` (the SHA-256), `If-None-Match` → 304, one `Range` → 206,
    /// `Cache-Control: private, no-cache` (a cache must ask again, and the server checks access again),
    /// `X-Content-Type-Options: nosniff`, a sandboxing CSP, and `Content-Disposition` — `attachment` for
    /// PDFs, always, `inline` for images.
    static func download(
        _ request: Request, _ route: Owner, _ services: Services, _ files: AttachmentFiles, thumbnail: Bool
    ) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let owner = try route.named(request, userID)
        let attachmentID = try request.parameter("attachment_id")
        let attachment = try await services.database.read { db in
            try AttachmentStore.attachment(owner, attachmentID: attachmentID, userID: userID, on: db)
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
                let trimmed = tag.trimmingASCIIWhitespace()
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

    static func delete(_ request: Request, _ route: Owner, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let owner = try route.named(request, userID)
        let attachmentID = try request.parameter("attachment_id")
        return try await services.writeNoContent { now, db in
            try AttachmentStore.delete(owner, attachmentID: attachmentID, actorID: userID, at: now, on: db)
        }
    }
}

extension AttachmentConfiguration {
    /// The limits `AttachmentStore.checkUpload` applies.
    var storeLimits: AttachmentStore.Limits {
        AttachmentStore.Limits(
            maxPerOwner: maxPerAlarm, uploadsPerMinute: uploadsPerMinute, userQuotaBytes: userQuotaBytes,
            groupQuotaBytes: groupQuotaBytes)
    }
}
