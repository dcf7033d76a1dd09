public import Storage

extension AccountStore {
    /// Replaces the password hash of `userID` if it is still `current` (the hash the caller verified
    /// the old password against). False — nothing written — when it changed meanwhile (another
    /// password change won the race) or the account is gone.
    public static func replacePasswordHash(
        userID: String, current: String, new: String, on db: any SQLConnection
    ) throws -> Bool {
        try db.run(
            "UPDATE users SET password_hash = ?3 WHERE id = ?1 AND password_hash = ?2 AND deleted_ms IS NULL",
            [.text(userID), .text(current), .text(new)]) == 1
    }
}
