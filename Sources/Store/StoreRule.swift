import Storage

/// The rules the migrations' triggers enforce on every write, whoever writes (the API, chronir-admin,
/// another instance), by the name the trigger raises.
public enum StoreRule: String, Sendable {
    /// A frozen group's rows are read-only (migration 0005's freeze triggers): `GroupModeration.freeze`.
    case groupFrozen = "group_frozen"
}

extension Error {
    /// The Store rule a trigger refused this write with, when that is what failed.
    public var violatedRule: StoreRule? { storageFailure?.raisedRule.flatMap(StoreRule.init(rawValue:)) }
}
