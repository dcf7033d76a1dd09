import Domain
import Storage
import Store
import Wire

/// Where and whether a user is notified (docs/notifications.md#devices):
/// `/v1/me/devices…` — the push devices of the caller's account — and
/// `PATCH /v1/groups/{id}/membership` — the caller's own `notification_enabled` for a group — and
/// `GET /v1/push/vapid-public-key`, the key a browser subscribes with.
enum NotificationRoutes {
    /// `PUT /v1/me/devices/{device_id}`: exactly one of `token` (apns, fcm) and `subscription`
    /// (webpush, as `PushSubscription.toJSON()` gives it).
    struct DeviceBody: StrictBody {
        var platform: Device.Platform
        var provider: Device.Provider
        var token: String?
        var subscription: Device.WebPushSubscription?
        var appVersion: String?
        var locale: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case platform, provider, token, subscription, locale
            case appVersion = "app_version"
        }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            platform = try c.decode(Device.Platform.self, forKey: .platform)
            provider = try c.decode(Device.Provider.self, forKey: .provider)
            token = try c.decodeIfPresent(String.self, forKey: .token)
            subscription = try c.decodeIfPresent(SubscriptionBody.self, forKey: .subscription)?.subscription
            appVersion = try c.decodeIfPresent(String.self, forKey: .appVersion)
            locale = try c.decodeIfPresent(String.self, forKey: .locale)
        }
    }

    /// `{"endpoint": …, "keys": {"p256dh": …, "auth": …}}`; a browser's `expirationTime` is accepted
    /// and ignored (push services report expiry with 404/410, which drops the device).
    struct SubscriptionBody: Decodable {
        var subscription: Device.WebPushSubscription
        enum CodingKeys: String, CodingKey, CaseIterable {
            case endpoint, keys
            case expirationTime
        }
        struct Keys: Decodable {
            var p256dh: String
            var auth: String
            enum CodingKeys: String, CodingKey, CaseIterable { case p256dh, auth }
            init(from decoder: any Decoder) throws {
                try StrictKeys.check(decoder, CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                p256dh = try c.decode(String.self, forKey: .p256dh)
                auth = try c.decode(String.self, forKey: .auth)
            }
        }
        init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let keys = try c.decode(Keys.self, forKey: .keys)
            subscription = Device.WebPushSubscription(
                endpoint: try c.decode(String.self, forKey: .endpoint), p256dh: keys.p256dh, auth: keys.auth)
        }
    }

    struct MembershipBody: StrictBody {
        var notificationEnabled: Bool
        enum CodingKeys: String, CodingKey, CaseIterable { case notificationEnabled = "notification_enabled" }
    }

    struct DeviceList: Encodable {
        var devices: [Device]
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/me/devices", .async { request in try await list(request, services) })
        router.add(.put, "/v1/me/devices/{device_id}", .async { request in try await put(request, services) })
        router.add(.delete, "/v1/me/devices/{device_id}", .async { request in try await delete(request, services) })
        router.add(.patch, "/v1/groups/{id}/membership", .async { request in try await membership(request, services) })
        router.add(.get, "/v1/push/vapid-public-key", .sync { _ in try vapidPublicKey(services) })
    }

    struct VAPIDPublicKey: Encodable {
        var publicKey: String
        enum CodingKeys: String, CodingKey { case publicKey = "public_key" }
    }

    /// No authentication (a page subscribes before anyone signs in): 200 with the server's VAPID
    /// public key, base64url of the 65-byte point (`applicationServerKey`); 404 when Web Push is
    /// not configured.
    static func vapidPublicKey(_ services: Services) throws -> HTTPResponse {
        guard let key = services.vapidPublicKey else { throw APIError(.notFound, "Web Push is not configured on this server") }
        return JSONBody.response(VAPIDPublicKey(publicKey: key))
    }

    /// What a registration writes, checked before the write.
    struct Registration: Sendable {
        var deviceID: String
        var platform: Device.Platform
        var provider: Device.Provider
        var address: Device.Address
        var appVersion: String?
        var locale: String?
    }

    /// 201 with the device when it is new to the account, 200 when it replaced the one of that id.
    /// The session is read inside the write (`Services.writeAsUser`): 401 before the body's 422.
    /// `.concurrent`: `DeviceStore.register` locks the account's row and the address first, and runs
    /// again as `.immediate` when it must move the address or drop a device.
    static func put(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (device, outcome) = try await services.writeAsUser(request, .concurrent) { _ in
            let deviceID = try DeviceRules.validateDeviceID(try request.parameter("device_id"))
            let body = try JSONBody.decode(DeviceBody.self, from: request)
            guard DeviceRules.allows(body.platform, body.provider) else {
                throw DomainError.invalidField(
                    field: "provider",
                    message: "provider \(body.provider.rawValue) does not reach platform \(body.platform.rawValue)")
            }
            return Registration(
                deviceID: deviceID, platform: body.platform, provider: body.provider,
                address: try DeviceRules.address(provider: body.provider, token: body.token, subscription: body.subscription),
                appVersion: try DeviceRules.label(body.appVersion, field: "app_version", maxBytes: DeviceRules.maxAppVersionBytes),
                locale: try DeviceRules.label(body.locale, field: "locale", maxBytes: DeviceRules.maxLocaleBytes))
        } write: { registration, caller, now, db in
            try DeviceStore.register(
                userID: caller.userID, deviceID: registration.deviceID, platform: registration.platform, provider: registration.provider,
                address: registration.address, appVersion: registration.appVersion, locale: registration.locale,
                sessionHash: caller.tokenHash, at: now, on: db)
        }
        return JSONBody.response(device, status: outcome == .created ? .created : .ok)
    }

    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let devices = try await services.database.read { db in try DeviceStore.devices(userID: userID, on: db) }
        return JSONBody.response(DeviceList(devices: devices))
    }

    /// 204; 404 when the account has no device of that id.
    static func delete(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let deleted = try await services.writeAsUser(request) { _ in
            try request.parameter("device_id")
        } write: { deviceID, caller, _, db in
            try DeviceStore.delete(userID: caller.userID, deviceID: deviceID, on: db)
        }
        guard deleted else { throw DomainError.notFound("device") }
        return HTTPResponse(status: .noContent)
    }

    /// The caller's own membership settings → 200 with their member document; 404 when they are not
    /// an active member. The session is read inside the write (`Services.writeAsUser`).
    static func membership(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let member = try await services.writeAsUser(request) { _ in
            (groupID: try request.parameter("id"), enabled: try JSONBody.decode(MembershipBody.self, from: request).notificationEnabled)
        } write: { input, caller, now, db in
            try GroupStore.setNotifications(groupID: input.groupID, userID: caller.userID, enabled: input.enabled, at: now, on: db)
        }
        return JSONBody.response(member)
    }
}
