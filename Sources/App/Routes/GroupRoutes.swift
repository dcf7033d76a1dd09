import Domain
import Hashing
import Storage
import Store
import Wire

/// `/v1/groups…`: groups, roles, membership (docs/design.md#roles-and-membership). Non-members —
/// including removed and left ones — get 404 for everything about a group; members lacking the role
/// get 403 PERMISSION_DENIED.
enum GroupRoutes {
    struct CreateBody: StrictBody {
        var name: String
        var description: String?
        var iconName: String?
        var colorTag: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, description
            case iconName = "icon_name"
            case colorTag = "color_tag"
        }
    }

    /// Absent fields stay; `null` clears an optional field.
    struct PatchBody: StrictBody {
        var name: String?
        var description: String??
        var iconName: String??
        var colorTag: String??
        var version: Int64?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case name, description, version
            case iconName = "icon_name"
            case colorTag = "color_tag"
        }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decodeIfPresent(String.self, forKey: .name)
            description = try StrictKeys.nullable(c, .description)
            iconName = try StrictKeys.nullable(c, .iconName)
            colorTag = try StrictKeys.nullable(c, .colorTag)
            version = try c.decodeIfPresent(Int64.self, forKey: .version)
        }
    }

    struct RoleBody: StrictBody {
        var role: GroupRole
        enum CodingKeys: String, CodingKey, CaseIterable { case role }
    }

    struct TransferBody: StrictBody {
        var userID: String
        enum CodingKeys: String, CodingKey, CaseIterable { case userID = "user_id" }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/groups", .async { request in try await create(request, services) })
        router.add(.get, "/v1/groups", .async { request in try await list(request, services) })
        router.add(.get, "/v1/groups/{id}", .async { request in try await show(request, services) })
        router.add(.patch, "/v1/groups/{id}", .async { request in try await patch(request, services) })
        router.add(.delete, "/v1/groups/{id}", .async { request in try await delete(request, services) })
        router.add(.patch, "/v1/groups/{id}/members/{user_id}", .async { request in try await changeRole(request, services) })
        router.add(.delete, "/v1/groups/{id}/members/{user_id}", .async { request in try await remove(request, services) })
        router.add(.post, "/v1/groups/{id}/transfer", .async { request in try await transfer(request, services) })
    }

    static func create(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        let body = try JSONBody.decode(CreateBody.self, from: request)
        let name = try GroupRules.normalizeName(body.name)
        let description = try GroupRules.normalizeDescription(body.description)
        let icon = try GroupRules.validateIconName(body.iconName)
        let color = try GroupRules.validateColorTag(body.colorTag)
        try await services.requireTier(user, .premium, "creating a group needs the premium tier")
        let maxMembers = Int64(services.config.maxMembersPerGroup)
        return try await services.writeJSON(status: .created) { now, db in
            try GroupStore.create(
                name: name, description: description, iconName: icon, colorTag: color, maxMembers: maxMembers,
                owner: user, at: now, on: db)
        }
    }

    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let query = try ListQuery(request)
        let page = try await services.database.read { db in
            try GroupStore.groups(ofUser: userID, after: query.after, limit: query.limit, on: db)
        }
        return JSONBody.response(ListPage("groups", page))
    }

    static func show(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let detail = try await services.database.read { db in
            let (group, _) = try GroupStore.access(groupID: groupID, userID: userID, on: db)
            return try GroupStore.detail(group, on: db)
        }
        return JSONBody.response(detail)
    }

    static func patch(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let group = try await services.writeToGroup(request) { _ in
            let body = try JSONBody.decode(PatchBody.self, from: request)
            let name = try body.name.map { n throws(DomainError) in try GroupRules.normalizeName(n) }
            var description: String?? = nil
            if let d = body.description { description = .some(try GroupRules.normalizeDescription(d)) }
            var icon: String?? = nil
            if let i = body.iconName { icon = .some(try GroupRules.validateIconName(i)) }
            var color: String?? = nil
            if let c = body.colorTag { color = .some(try GroupRules.validateColorTag(c)) }
            return (name: name, description: description, icon: icon, color: color, version: body.version)
        } write: { change, userID, groupID, now, db in
            try GroupStore.update(
                groupID: groupID, actorID: userID, name: change.name, description: change.description,
                iconName: change.icon, colorTag: change.color, expectedVersion: change.version, at: now, on: db)
        }
        return JSONBody.response(group)
    }

    static func delete(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        try await services.writeToGroup(request) { userID, groupID, now, db in
            try GroupStore.delete(groupID: groupID, actorID: userID, at: now, on: db)
        }
        return HTTPResponse(status: .noContent)
    }

    static func changeRole(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let member = try await services.writeToGroup(request) { _ in
            (targetID: try request.parameter("user_id"), role: try JSONBody.decode(RoleBody.self, from: request).role)
        } write: { change, userID, groupID, now, db in
            try GroupStore.changeRole(groupID: groupID, actorID: userID, targetID: change.targetID, role: change.role, at: now, on: db)
        }
        return JSONBody.response(member)
    }

    static func remove(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        try await services.writeToGroup(request) { _ in
            try request.parameter("user_id")
        } write: { targetID, userID, groupID, now, db in
            _ = try GroupStore.removeMember(groupID: groupID, actorID: userID, targetID: targetID, at: now, on: db)
        }
        return HTTPResponse(status: .noContent)
    }

    static func transfer(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let group = try await services.writeToGroup(request) { _ in
            try JSONBody.decode(TransferBody.self, from: request).userID
        } write: { targetID, userID, groupID, now, db in
            try GroupStore.transfer(groupID: groupID, actorID: userID, targetID: targetID, at: now, on: db)
        }
        return JSONBody.response(group)
    }
}

/// A request body that refuses unknown fields: `JSONBody.decode` checks its keys against `CodingKeys`
/// (a case for every field it knows) before decoding it, so a field the endpoint does not know is a
/// 422 naming it, not silently ignored.
protocol StrictBody: Decodable {
    associatedtype CodingKeys: CodingKey & CaseIterable
    /// The keys a body may have; by default its `CodingKeys`.
    static var allowedKeys: Set<String> { get }
}

extension StrictBody {
    static var allowedKeys: Set<String> { Set(CodingKeys.allCases.map(\.stringValue)) }
}

extension JSONBody {
    /// Decodes a strict body: `StrictKeys.check` first, then the body's own decoding.
    static func decode<Body: StrictBody>(_ type: Body.Type, from request: Request) throws(APIError) -> Body {
        try decode(Checked<Body>.self, from: request).body
    }

    private struct Checked<Body: StrictBody>: Decodable {
        var body: Body
        init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, allowed: Body.allowedKeys)
            body = try Body(from: decoder)
        }
    }
}

/// Strict request bodies (`StrictBody`) and PATCH fields.
enum StrictKeys {
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Throws `dataCorrupted` at the first key that is not one of `Keys`.
    static func check<Keys: CodingKey & CaseIterable>(_ decoder: any Decoder, _ keys: Keys.Type) throws {
        try check(decoder, allowed: Set(Keys.allCases.map(\.stringValue)))
    }

    /// Throws `dataCorrupted` at the first key that is not in `allowed`.
    static func check(_ decoder: any Decoder, allowed: Set<String>) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        if let extra = container.allKeys.first(where: { !allowed.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath + [extra], debugDescription: "unknown field"))
        }
    }

    /// A PATCH field that `null` clears: absent → nil; `null` → `.some(nil)`; a value → `.some(value)`.
    static func nullable<K: CodingKey, Value: Decodable>(_ c: KeyedDecodingContainer<K>, _ key: K) throws -> Value?? {
        guard c.contains(key) else { return nil }
        return .some(try c.decodeNil(forKey: key) ? nil : try c.decode(Value.self, forKey: key))
    }
}

/// One page of a list endpoint (docs/design.md#api-conventions): `{"<name>": [items], "next_cursor": …}`;
/// `next_cursor` is always present, null on the last page. Every list answer is this one shape.
struct ListPage<Item: Encodable & Sendable>: Encodable {
    /// The key the items stand under (`groups`, `alarms`, …).
    var name: String
    var items: [Item]
    var nextCursor: String?

    init(_ name: String, _ page: GroupStore.Page<Item>) {
        self.name = name
        items = page.items
        nextCursor = page.next.map(ListQuery.cursor)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: StrictKeys.AnyKey.self)
        try c.encode(items, forKey: StrictKeys.AnyKey(stringValue: name))
        try c.encode(nextCursor, forKey: StrictKeys.AnyKey(stringValue: "next_cursor"))  // explicit null
    }
}

/// `?limit=&cursor=` of list endpoints (docs/design.md#api-conventions): `limit` 1…100 (default 50); `cursor` is the
/// opaque `next_cursor` of the previous page, and empty or absent for the first.
struct ListQuery {
    /// Largest page.
    static let maxLimit = 100
    /// Page size when `limit` is absent.
    static let defaultLimit = 50

    var limit = ListQuery.defaultLimit
    var after: GroupStore.PageKey?

    init(_ request: Request) throws(DomainError) {
        let params = QueryParameters(request)
        limit = try params.limit(default: Self.defaultLimit, max: Self.maxLimit)
        if let value = params["cursor"], !value.isEmpty {  // `cursor=` (no page yet) is the first page
            guard let key = Self.key(value) else { throw .invalidField(field: "cursor", message: "cursor is invalid") }
            after = key
        }
    }

    /// The opaque form of a page key: base64url of `<ms>.<id>`.
    static func cursor(_ key: GroupStore.PageKey) -> String {
        Base64URL.encode(Array("\(key.milliseconds).\(key.id)".utf8))
    }

    static func key(_ cursor: String) -> GroupStore.PageKey? {
        guard cursor.utf8.count <= 128, let bytes = Base64URL.decode(cursor),
            let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        let parts = text.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let ms = Int64(parts[0]), parts[1].utf8.count == 36 else { return nil }
        return GroupStore.PageKey(milliseconds: ms, id: String(parts[1]))
    }
}
