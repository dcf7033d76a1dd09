/// A transaction opened inside another (SQLite's; `PostgresConnection` keeps these names and this
/// contract but holds SAVEPOINT and RELEASE back for its pipelines): `body` runs inside
/// `SAVEPOINT chronir_savepoint_<depth>`; success releases the savepoint; an error rolls back to it
/// and releases it — unless `isOpen` says the engine already rolled the whole transaction back,
/// leaving no savepoint to undo — and is rethrown, so the outer transaction carries on without it.
public enum Savepoint {
    /// Runs `body` in the savepoint named after `depth` (1 for the first nested level), issuing its
    /// statements through `execute`.
    public static func run<T>(
        depth: Int, execute: (String) throws -> Void, isOpen: () -> Bool = { true }, _ body: () throws -> T
    ) throws -> T {
        let name = "chronir_savepoint_\(depth)"
        try execute("SAVEPOINT \(name)")
        do {
            let result = try body()
            try execute("RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            if isOpen() {
                _ = try? execute("ROLLBACK TO SAVEPOINT \(name)")
                _ = try? execute("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
    }
}
