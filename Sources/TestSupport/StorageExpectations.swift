import Storage

/// Whether `body` threw a constraint violation (unique, check, foreign key, not null or a trigger's
/// rule) from either engine — the engine-neutral form of "the schema refuses this".
public func violatesConstraint<T>(_ body: () throws -> T) -> Bool {
    do {
        _ = try body()
        return false
    } catch {
        return error.storageFailure?.isConstraintViolation == true
    }
}
