import Domain
import Storage
import Store
import Wire

/// `/v1/me/settings`: the caller's synced preferences (docs/personal-sync.md#settings).
/// Every tier: they are the account's, not cloud storage of alarms.
enum SettingsRoutes {
    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/me/settings", .async { request in try await show(request, services) })
        router.add(.patch, "/v1/me/settings", .async { request in try await patch(request, services) })
    }

    /// A PATCH: any of `UserSettings.patchableFields` (absent fields stay; `alarm_volume_override: null`
    /// clears it) and an optional `version`. The fields are laid over the stored document
    /// (`UserSettings.applying`), so they are decoded exactly as stored settings are.
    struct SettingsPatch: Decodable {
        var version: Int64?
        private enum CodingKeys: String, CodingKey { case version }

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: StrictKeys.AnyKey.self)
            if let extra = fields.allKeys.first(where: {
                $0.stringValue != "version" && !UserSettings.patchableFields.contains($0.stringValue)
            }) {
                throw DecodingError.dataCorrupted(.init(codingPath: [extra], debugDescription: "unknown field"))
            }
            version = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Int64.self, forKey: .version)
        }
    }

    static func show(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        return JSONBody.response(try await services.database.read { db in try UserSettingsStore.settings(userID: userID, on: db) })
    }

    /// → the settings; stale `version` → 409 CA010 with the current document.
    static func patch(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let patchJSON = request.http.body
        // The session is read with the write (`Services.writeAsUser`); `.concurrent`: the account's
        // row is locked first (`UserSettingsStore.update`).
        let settings = try await services.writeAsUser(request, .concurrent) { _ in
            try JSONBody.decode(SettingsPatch.self, from: request).version
        } write: { version, caller, now, db in
            try UserSettingsStore.update(userID: caller.userID, expectedVersion: version, at: now, on: db) { settings in
                do {
                    settings = try UserSettingsRules.validate(settings.applying(patchJSON: patchJSON))
                } catch let error as DecodingError {
                    throw JSONBody.apiError(for: error)
                }
            }
        }
        return JSONBody.response(settings, status: .ok)
    }
}
